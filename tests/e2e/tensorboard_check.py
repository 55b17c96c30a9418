#!/usr/bin/env python3
"""Reads cifar_mpi --tensorboard folders with TensorBoard's own reader (the
event accumulator of PyPI's tensorboard, from .venv-tools) and checks them.

  tensorboard_check.py run TB_DIR METRICS.jsonl TRAIN_LOG COSINE_PEAK_LR TOTAL_STEPS
      every tag is there; epoch scalars sit at the metrics file's steps with
      its values; train/loss at the steps and values of the progress lines;
      train/learning_rate follows the cosine schedule
  tensorboard_check.py epochs TB_DIR METRICS.jsonl
      the epoch scalars only, as above
  tensorboard_check.py same TB_A TB_B TAG...
      the two folders give the same (step, value) lists for these tags
  tensorboard_check.py continuous TB_DIR FILES FIRST_STEP_OF_LAST_FILE
      FILES event files; the last starts with SessionLog START at that step;
      read file by file in name order, every tag's steps strictly increase
  tensorboard_check.py list TB_DIR
      prints every scalar tag with its steps and values
Exits 1 naming the first difference.
"""
import json
import math
import os
import re
import sys

try:
    from tensorboard.backend.event_processing import event_accumulator, event_file_loader
    from tensorboard.compat.proto import event_pb2
except ImportError as e:
    sys.exit(f"FAIL: {sys.executable} cannot import tensorboard ({e}); run tools/setup.sh, which makes "
             ".venv-tools with the pinned tensorboard of dev/requirements-tools.txt")

STEP_TAGS = ["train/loss", "train/learning_rate", "train/images_per_second"]
EPOCH_TAGS = ["epoch/train_loss", "epoch/test_loss", "epoch/test_accuracy", "epoch/seconds",
              "epoch/images_per_second"]
# Metrics-file key of each epoch tag, and the file's printed precision.
METRICS_KEYS = {"epoch/train_loss": ("train_loss", 1e-6), "epoch/test_loss": ("test_loss", 1e-6),
                "epoch/test_accuracy": ("test_accuracy", 1e-6), "epoch/seconds": ("epoch_seconds", 1e-3),
                "epoch/images_per_second": ("images_per_second", 0.1)}


def fail(message):
    sys.exit(f"FAIL: {message}")


def scalars(folder):
    """{tag: [(step, value), ...]} as TensorBoard shows the folder (every value kept)."""
    acc = event_accumulator.EventAccumulator(folder, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def close(a, b, tolerance):
    # float32 in the file: 6e-8 relative, plus what the other side printed.
    return abs(a - b) <= tolerance + 1e-6 * abs(b)


def check_epochs(runs, metrics_path):
    rows = [json.loads(line) for line in open(metrics_path) if line.strip()]
    for tag, (key, tolerance) in METRICS_KEYS.items():
        got = runs[tag]
        want = [(r["steps"], r[key]) for r in rows]
        if [s for s, _ in got] != [s for s, _ in want]:
            fail(f"{tag} at steps {[s for s, _ in got]}, the metrics file's epochs end at {[s for s, _ in want]}")
        for (step, value), (_, expected) in zip(got, want):
            if not close(value, expected, tolerance):
                fail(f"{tag} at step {step} is {value}, {metrics_path} says {key} {expected}")
    print(f"ok   {len(EPOCH_TAGS)} epoch tags equal {metrics_path} at steps {[r['steps'] for r in rows]}")


def check_steps(runs, log_path, peak_lr, total_steps):
    """Progress lines 'Epoch: E | Batch: B/N | Loss: L | ...' at step E*N + B + 1 (one batch per step)."""
    lines = re.findall(r"^Epoch: (\d+) \| Batch: (\d+)/(\d+) \| Loss: ([0-9.]+)", open(log_path).read(), re.M)
    want = [(int(e) * int(n) + int(b) + 1, float(loss)) for e, b, n, loss in lines]
    got = runs["train/loss"]
    if [s for s, _ in got] != [s for s, _ in want]:
        fail(f"train/loss at steps {[s for s, _ in got]}, progress lines at {[s for s, _ in want]}")
    for (step, value), (_, printed) in zip(got, want):
        if not close(value, printed, 5e-5):  # the line prints 4 decimals
            fail(f"train/loss at step {step} is {value}, the progress line printed {printed}")
    for step, lr in runs["train/learning_rate"]:
        # The rate of step `step` (1-based): the cosine schedule at step - 1 of total_steps.
        expected = peak_lr * 0.5 * (1 + math.cos(math.pi * (step - 1) / total_steps))
        if not close(lr, expected, 1e-7):
            fail(f"train/learning_rate at step {step} is {lr}, the cosine schedule gives {expected}")
    if any(v <= 0 for _, v in runs["train/images_per_second"]):
        fail("train/images_per_second has a value <= 0")
    print(f"ok   train/loss at the {len(want)} progress lines' steps and values; learning rate follows the schedule")


def all_tags(folder):
    runs = scalars(folder)
    missing = [t for t in STEP_TAGS + EPOCH_TAGS if t not in runs]
    if missing:
        fail(f"{folder} lacks tag(s) {missing}; it has {sorted(runs)}")
    return runs


def run(folder, metrics_path, log_path, peak_lr, total_steps):
    runs = all_tags(folder)
    check_epochs(runs, metrics_path)
    check_steps(runs, log_path, float(peak_lr), int(total_steps))


def epochs(folder, metrics_path):
    check_epochs(all_tags(folder), metrics_path)


def same(folder_a, folder_b, tags):
    a, b = scalars(folder_a), scalars(folder_b)
    for tag in tags:
        if a.get(tag) != b.get(tag):
            fail(f"{tag} differs:\n  {folder_a}: {a.get(tag)}\n  {folder_b}: {b.get(tag)}")
    print(f"ok   {folder_b} shows what {folder_a} shows for {', '.join(tags)}")


def event_files(folder):
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if "tfevents" in f)


def continuous(folder, count, first_step):
    files = event_files(folder)
    if len(files) != int(count):
        fail(f"{folder} has {len(files)} event file(s), expected {count}: {files}")
    events = list(event_file_loader.EventFileLoader(files[-1]).Load())
    start = events[1] if len(events) > 1 else None
    if not (events[0].file_version == "brain.Event:2" and start and start.HasField("session_log") and
            start.session_log.status == event_pb2.SessionLog.START and start.step == int(first_step)):
        fail(f"{files[-1]} does not begin with file_version and SessionLog START at step {first_step}")
    last = {}
    for path in files:
        for event in event_file_loader.EventFileLoader(path).Load():
            for value in event.summary.value:
                if event.step <= last.get(value.tag, -1):
                    fail(f"{value.tag}: step {event.step} in {path} after step {last[value.tag]}")
                last[value.tag] = event.step
    print(f"ok   {len(files)} files; every tag's steps increase across them; the last begins with START "
          f"at step {first_step}")


def listing(folder):
    print(f"TensorBoard event accumulator over {folder}: {', '.join(os.path.basename(f) for f in event_files(folder))}")
    for tag, values in sorted(scalars(folder).items()):
        shown = ", ".join(f"{s}:{v:.6g}" for s, v in values)
        print(f"  {tag:26s} {len(values):3d} values  step:value  {shown}")


def main():
    commands = {"run": (run, 5), "epochs": (epochs, 2), "continuous": (continuous, 3), "list": (listing, 1)}
    if len(sys.argv) >= 2 and sys.argv[1] == "same" and len(sys.argv) >= 5:
        return same(sys.argv[2], sys.argv[3], sys.argv[4:])
    if len(sys.argv) < 2 or sys.argv[1] not in commands or len(sys.argv) != 2 + commands[sys.argv[1]][1]:
        sys.exit(__doc__)
    commands[sys.argv[1]][0](*sys.argv[2:])


if __name__ == "__main__":
    main()
