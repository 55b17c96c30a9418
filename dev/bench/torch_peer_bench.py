#!/usr/bin/env python3
"""PyTorch peers for cifar_mpi's throughput on one device: times training
steps of the recipe's ConvNet or the CIFAR form of ResNet-18 at the same
per-rank batch size, in plain PyTorch eager and with torch.compile.

The models are the ones cifar_mpi trains (cifar_models.py, beside this file):
the ConvNet of the PyTorch DDP recipe (src/model/convnet.cpp) and
torchvision's ResNet-18 with a 3x3 stride-1 stem and no max-pool
(src/model/resnet.cpp), written out so that torchvision is not needed.
Images are uint8 CIFAR-shaped tensors kept on the device (random, or the
first --limit images of a CIFAR-10 binary folder), normalised on the device
each step as in the recipe (mean 0.5, std 0.5), so a figure is the step
rate: forward, loss, backward, optimiser step. Unlike the recipe there is no
DataLoader: that is the recipe's own figure (gpu_check.sh bench_convnet_py).

Variants (--variants, comma-separated), each with a fresh model and
optimiser in the same process:
  eager         plain PyTorch: torch.optim.Adam's default (multi-tensor on CUDA)
  compile       torch.compile(model, mode=--compile-mode; "reduce-overhead",
                the default, replays CUDA graphs), and the fused Adam
                (fused=True on CUDA) -- PyTorch's fastest step short of
                writing one's own
  ...-bf16/-fp16 the same under autocast (fp16 with a GradScaler)
Warm-up steps (compilation and graph capture happen there) are timed apart.

Usage:
  python3 torch_peer_bench.py --model convnet --batch-size 256 --steps 60 \\
      --variants eager,eager-bf16,compile,compile-bf16 [--data DIR] [--channels-last]
Prints, per variant:
  TORCH_PEER_RESULT model=convnet variant=compile-bf16 images_per_second=<x> step_ms=<ms> warmup_s=<s> ...
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cifar_models import MODELS  # noqa: E402  (cifar_mpi's models, beside this file)


PRECISIONS = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def load_images(data_dir, limit, generator):
    """uint8 images (N, 3, 32, 32) and labels: from the binary layout, or random."""
    if data_dir:
        names = [f"data_batch_{i}.bin" for i in range(1, 6)]
        rows = [np.fromfile(os.path.join(data_dir, n), np.uint8).reshape(-1, 3073) for n in names
                if os.path.exists(os.path.join(data_dir, n))]
        if not rows:
            raise SystemExit(f"--data {data_dir}: no data_batch_*.bin files (CIFAR-10 binary layout expected)")
        raw = np.concatenate(rows)[:limit]
        images = torch.from_numpy(raw[:, 1:].reshape(-1, 3, 32, 32).copy())
        labels = torch.from_numpy(raw[:, 0].astype(np.int64))
        return images, labels
    images = torch.randint(0, 256, (limit, 3, 32, 32), dtype=torch.uint8, generator=generator)
    labels = torch.randint(0, 10, (limit,), generator=generator)
    return images, labels


def parse_variant(text):
    """'compile-bf16' -> ('compile', 'bf16'); SystemExit naming the valid forms otherwise."""
    kind, _, precision = text.partition("-")
    precision = precision or "fp32"
    if kind not in ("eager", "compile") or precision not in PRECISIONS:
        raise SystemExit(f"--variants: '{text}' is not one of eager, compile, optionally with -bf16 or -fp16 "
                         "(e.g. eager,compile-bf16)")
    return kind, precision


def make_optimizer(name, params, lr, fused):
    # fused=None leaves PyTorch's default (multi-tensor on CUDA); torch 1.x has no `fused` for SGD.
    extra = {"fused": True} if fused else {}
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, nesterov=True, weight_decay=5e-4, **extra)
    return torch.optim.Adam(params, lr=lr, **extra)


def run_variant(a, variant, images, labels, dev):
    kind, precision = parse_variant(variant)
    torch.manual_seed(a.seed)
    memory_format = torch.channels_last if a.channels_last else torch.contiguous_format
    model = MODELS[a.model]().to(dev, memory_format=memory_format)
    compiled = kind == "compile"
    opt = make_optimizer(a.optimizer, model.parameters(), a.lr, fused=compiled and dev.type == "cuda")
    if compiled:
        if not hasattr(torch, "compile"):
            raise SystemExit(f"--variants {variant}: torch {torch.__version__} has no torch.compile (2.0 or later)")
        model = torch.compile(model, mode=a.compile_mode, backend=a.compile_backend)
    crit = nn.CrossEntropyLoss()
    amp_dtype = PRECISIONS[precision]
    use_scaler = precision == "fp16" and dev.type == "cuda"
    scaler = (torch.amp.GradScaler("cuda", enabled=use_scaler) if hasattr(torch.amp, "GradScaler")
              else torch.cuda.amp.GradScaler(enabled=use_scaler))
    batches = images.shape[0] // a.batch_size
    # CUDA graphs of "reduce-overhead" reuse their output memory: each step
    # says where it begins, so that the graphs may overwrite the last one's.
    mark_step = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None) if compiled else None

    def step(i):
        if mark_step:
            mark_step()
        lo = (i % batches) * a.batch_size
        x = images[lo:lo + a.batch_size].float().div_(255).sub_(0.5).div_(0.5)
        x = x.contiguous(memory_format=memory_format)
        y = labels[lo:lo + a.batch_size]
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            loss = crit(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    model.train()
    t0 = time.perf_counter()
    for i in range(a.warmup):
        step(i)
    sync()
    warmup_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(a.steps):
        loss = step(a.warmup + i)
    sync()
    seconds = time.perf_counter() - t0
    final_loss = loss.item()
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    mode = f" compile_mode={a.compile_mode} compile_backend={a.compile_backend}" if compiled else ""
    print(f"TORCH_PEER_RESULT model={a.model} variant={variant} images_per_second={a.steps * a.batch_size / seconds:.1f} "
          f"step_ms={1000 * seconds / a.steps:.2f} warmup_s={warmup_s:.1f} device={name.replace(' ', '_')} "
          f"batch_size={a.batch_size} precision={precision}{mode} torch={torch.__version__} "
          f"final_loss={final_loss:.4f}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=sorted(MODELS), default="resnet18")
    p.add_argument("--variants", default="eager", help="comma-separated: eager, compile, each optionally -bf16/-fp16")
    p.add_argument("--compile-mode", default="reduce-overhead",
                   help="torch.compile mode of the compile variants (reduce-overhead: CUDA graphs)")
    p.add_argument("--compile-backend", default="inductor",
                   help="torch.compile backend (inductor; the tests use eager: the tracing without the code generation)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=60, help="timed optimiser steps")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first (compilation, cuDNN autotune, allocator)")
    p.add_argument("--data", default="", help="CIFAR-10 binary folder (default: random images)")
    p.add_argument("--limit", type=int, default=10000, help="images kept on the device")
    # Defaults follow cifar_mpi's (Adam, lr 1e-3, fp32); pass --channels-last to match its default layout.
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="adam")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.steps < 1 or a.warmup < 0 or a.batch_size < 1 or a.limit < a.batch_size:
        raise SystemExit("--steps and --batch-size must be positive, --warmup at least 0 and --limit at least "
                         "--batch-size")
    variants = [v for v in a.variants.split(",") if v]
    for v in variants:
        parse_variant(v)  # every name checked before the first variant runs

    dev = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
    images, labels = load_images(a.data, a.limit, torch.Generator().manual_seed(a.seed))
    images, labels = images.to(dev), labels.to(dev)
    for v in variants:
        run_variant(a, v, images, labels, dev)


if __name__ == "__main__":
    main()
