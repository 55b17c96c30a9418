#!/usr/bin/python3
"""tools/plot_metrics on two synthetic metrics files writes a real PNG, and a
malformed file fails with a message naming its line; --confusion draws a
synthetic cifar_eval JSON, and refuses one without a confusion matrix.
Usage: plot_metrics_test.py PLOT_METRICS WORK_DIR"""
import json
import math
import os
import subprocess
import sys


def write_run(path, epochs, speed, rate):
    with open(path, "w") as f:
        for e in range(epochs):
            loss = 2.3 * math.exp(-rate * e) + 0.3
            f.write(json.dumps({"epoch": e, "train_loss": loss, "test_loss": loss + 0.1,
                                "test_accuracy": 1.0 - loss / 2.6, "lr": 1e-3,
                                "images_per_second": speed + 10 * e, "epoch_seconds": 50000 / speed,
                                "world_size": 2}) + "\n")


def check_confusion(tool, work):
    """--confusion on a 10-class evaluation with a known diagonal."""
    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    confusion = [[50 if t == p else (t + p) % 4 for p in range(10)] for t in range(10)]
    evaluation = {"model": "convnet", "samples": sum(map(sum, confusion)), "views": 10,
                  "accuracy": 500 / sum(map(sum, confusion)), "classes": classes,
                  "class_accuracy": [50 / sum(row) for row in confusion], "confusion": confusion}
    path, png = os.path.join(work, "eval.json"), os.path.join(work, "confusion.png")
    with open(path, "w") as f:
        json.dump(evaluation, f)
    r = subprocess.run([sys.executable, tool, "--confusion", path, "--output", png], capture_output=True, text=True)
    print(r.stdout, r.stderr)
    failures = []
    data = open(png, "rb").read() if r.returncode == 0 and os.path.exists(png) else b""
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or len(data) < 20000:
        failures.append(f"--confusion: rc={r.returncode}, {len(data)} bytes of PNG")
    del evaluation["confusion"]
    with open(path, "w") as f:
        json.dump(evaluation, f)
    r = subprocess.run([sys.executable, tool, "--confusion", path, "--output", png], capture_output=True, text=True)
    if r.returncode == 0 or "eval.json: missing key(s) confusion" not in r.stderr:
        failures.append(f"evaluation without a confusion matrix not reported: rc={r.returncode} stderr={r.stderr!r}")
    return failures


def check_output_rules(tool, work, metrics):
    """The output rules of every program: never an input, never a run's file,
    never another kind of file (each refused with exit code 2 and the file
    unchanged); an earlier PNG is replaced, and that is said."""
    failures = []
    model = os.path.join(work, "model.pth")
    with open(model, "wb") as f:
        f.write(b"PK\x03\x04 a model file")
    open(os.path.join(work, ".model.pth.run"), "w").write("run 0123456789abcdef\n")
    notes = os.path.join(work, "notes.txt")
    open(notes, "w").write("my notes\n")
    for output, why in [(metrics, "the same file as the input"), (model, "a file a training run owns"),
                        (notes, "not a PNG")]:
        before = open(output, "rb").read()
        r = subprocess.run([sys.executable, tool, metrics, "--output", output], capture_output=True, text=True)
        if r.returncode != 2 or why not in r.stderr or open(output, "rb").read() != before:
            failures.append(f"--output {os.path.basename(output)} ({why}): rc={r.returncode} stderr={r.stderr!r}")
    png = os.path.join(work, "again.png")
    for _ in range(2):
        r = subprocess.run([sys.executable, tool, metrics, "--output", png], capture_output=True, text=True)
    if r.returncode != 0 or "replaced the earlier PNG" not in r.stdout:
        failures.append(f"an earlier PNG replaced without a word: rc={r.returncode} stdout={r.stdout!r}")
    return failures


def main():
    tool, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    a, b = os.path.join(work, "convnet_np2.jsonl"), os.path.join(work, "resnet18_np4.jsonl")
    write_run(a, 10, 4000.0, 0.35)
    write_run(b, 6, 1500.0, 0.6)
    png = os.path.join(work, "metrics.png")
    if os.path.exists(png):
        os.unlink(png)
    r = subprocess.run([sys.executable, tool, a, b, "--output", png, "--title", "synthetic"],
                       capture_output=True, text=True)
    print(r.stdout, r.stderr)
    failures = []
    if r.returncode != 0:
        failures.append(f"plot_metrics exited {r.returncode}")
    data = open(png, "rb").read() if os.path.exists(png) else b""
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        failures.append(f"{png} is not a PNG")
    if len(data) < 20000:
        failures.append(f"{png} is only {len(data)} bytes: nothing drawn?")
    if [f for f in os.listdir(work) if f.startswith(".plot_metrics.")]:
        failures.append("temporary file left behind")

    # A diverged epoch: cifar_mpi writes null for values that are not finite.
    gaps = os.path.join(work, "gaps.jsonl")
    with open(gaps, "w") as f:
        f.write('{"epoch": 0, "train_loss": 2.0, "test_loss": 2.1, "test_accuracy": 0.2, "images_per_second": 100}\n')
        f.write('{"epoch": 1, "train_loss": null, "test_loss": null, "test_accuracy": null, '
                '"images_per_second": 100}\n')
    r = subprocess.run([sys.executable, tool, gaps, "--output", os.path.join(work, "gaps.png")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"null values not drawn as gaps: rc={r.returncode} stderr={r.stderr!r}")

    bad = os.path.join(work, "bad.jsonl")
    with open(bad, "w") as f:
        f.write('{"epoch": 0, "train_loss": 1.0}\n')
    r = subprocess.run([sys.executable, tool, bad, "--output", os.path.join(work, "bad.png")],
                       capture_output=True, text=True)
    if r.returncode == 0 or "bad.jsonl:1: missing key(s) test_loss" not in r.stderr:
        failures.append(f"malformed file not reported: rc={r.returncode} stderr={r.stderr!r}")

    failures += check_confusion(tool, work)
    failures += check_output_rules(tool, work, a)
    for f in failures:
        print("FAIL", f)
    if failures:
        sys.exit(1)
    print(f"ok: {png} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
