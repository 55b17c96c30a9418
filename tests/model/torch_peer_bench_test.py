#!/usr/bin/python3
"""dev/bench/torch_peer_bench.py, the PyTorch peers that dev/gpu_check.sh
times against cifar_mpi: its networks have cifar_mpi's parameter counts
(convnet 315,722, resnet18 11,173,962: src/model, tools/scaling_model), each
variant asked for trains on the CPU and reports one result line with its
figures, torch.compile's variant included where this torch has it (traced
with the eager backend: the script's use of torch.compile, without the code
generation; it must end at the eager variant's loss), and a variant name it does not know is refused before any runs.
Usage: torch_peer_bench_test.py TORCH_PEER_BENCH"""
import importlib.util
import math
import re
import subprocess
import sys

import torch

RESULT_RE = re.compile(r"^TORCH_PEER_RESULT model=(\S+) variant=(\S+) images_per_second=([0-9.]+) "
                       r"step_ms=([0-9.]+) warmup_s=([0-9.]+) .*final_loss=(\S+)$", re.M)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(script, *args):
    cmd = [sys.executable, script, "--device", "cpu", "--batch-size", "16", "--limit", "32", "--steps", "2",
           "--warmup", "1", *args]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    print(p.stdout + p.stderr, flush=True)
    return p


def main():
    script = sys.argv[1]
    spec = importlib.util.spec_from_file_location("torch_peer_bench", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    def count(model):
        return sum(p.numel() for p in model.parameters())

    n = count(bench.MODELS["convnet"]())
    check(n == 315_722, f"convnet has cifar_mpi's 315,722 parameters ({n:,})")
    n = count(bench.MODELS["resnet18"]())
    check(n == 11_173_962, f"resnet18 has cifar_mpi's 11,173,962 parameters ({n:,})")

    variants = ["eager", "eager-bf16"] + (["compile"] if hasattr(torch, "compile") else [])
    extra = ["--compile-backend", "eager"] if "compile" in variants else []
    p = run(script, "--model", "convnet", "--variants", ",".join(variants), "--channels-last", *extra)
    check(p.returncode == 0, f"convnet {','.join(variants)} exits 0 (torch {torch.__version__})")
    results = RESULT_RE.findall(p.stdout)
    check([(m, v) for m, v, *_ in results] == [("convnet", v) for v in variants],
          f"one result line per variant, in order: {[v for _, v, *_ in results]}")
    for _, v, ips, step_ms, _, loss in results:
        check(float(ips) > 0 and float(step_ms) > 0 and math.isfinite(float(loss)),
              f"{v}: images/s {ips} and step {step_ms} ms above 0, final loss {loss} finite")
    losses = {v: loss for _, v, *_, loss in results}
    if "compile" in losses:  # the same seed, data and optimiser: traced, the model computes what it did eagerly
        check(losses["compile"] == losses["eager"],
              f"compile (eager backend) ends at eager's loss: {losses['compile']} and {losses['eager']}")

    p = run(script, "--model", "convnet", "--variants", "eager,compiled-bf16")
    check(p.returncode != 0 and "'compiled-bf16' is not one of" in p.stderr and "TORCH_PEER_RESULT" not in p.stdout,
          "an unknown variant is refused by name before any variant runs")

    if failures:
        sys.exit(f"{len(failures)} check(s) failed: {failures}")


if __name__ == "__main__":
    main()
