#!/usr/bin/env python3
"""Python peer for cifar_mpi's `--model resnet18` throughput: times training
steps of the CIFAR form of ResNet-18 (torchvision's resnet18 with a 3x3
stride-1 stem and no max-pool, the layout src/model/resnet.cpp mirrors) with
plain PyTorch on one device, at the same per-rank batch size.

The reference recipe (seed_ddp.py) has only the ConvNet; this is its ResNet-18
counterpart. Images are uint8 CIFAR-shaped tensors kept on the device
(random, or the first --limit images of a CIFAR-10 binary folder), normalised
on the device each step as in the recipe (mean 0.5, std 0.5), so the figure
is the model's step rate: forward, loss, backward, optimiser step.

Usage:
  python3 torch_resnet_bench.py --batch-size 256 --steps 60 [--data DIR] [--precision bf16]
Prints, last:  TORCH_RESNET_RESULT images_per_second=<x> step_ms=<ms> device=<name> ...
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torchvision


def cifar_resnet18(num_classes=10):
    """torchvision's ResNet-18 in its CIFAR form (3x3 stem, stride 1, no max-pool)."""
    model = torchvision.models.resnet18(num_classes=num_classes)
    model.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out", nonlinearity="relu")
    model.maxpool = nn.Identity()
    return model


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


def make_optimizer(name, params, lr):
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    return torch.optim.Adam(params, lr=lr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=60, help="timed optimiser steps")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first (cuDNN autotune, allocator)")
    p.add_argument("--data", default="", help="CIFAR-10 binary folder (default: random images)")
    p.add_argument("--limit", type=int, default=10000, help="images kept on the device")
    # Defaults follow cifar_mpi's (Adam, lr 1e-3, fp32); pass --channels-last to match its default layout.
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="adam")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.steps < 1 or a.batch_size < 1 or a.limit < a.batch_size:
        raise SystemExit("--steps and --batch-size must be positive and --limit at least --batch-size")

    dev = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device)
    torch.manual_seed(a.seed)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
    gen = torch.Generator().manual_seed(a.seed)
    images, labels = load_images(a.data, a.limit, gen)
    images, labels = images.to(dev), labels.to(dev)

    memory_format = torch.channels_last if a.channels_last else torch.contiguous_format
    model = cifar_resnet18().to(dev, memory_format=memory_format)
    opt = make_optimizer(a.optimizer, model.parameters(), a.lr)
    crit = nn.CrossEntropyLoss()
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.precision)
    use_scaler = a.precision == "fp16" and dev.type == "cuda"
    scaler = (torch.amp.GradScaler("cuda", enabled=use_scaler) if hasattr(torch.amp, "GradScaler")
              else torch.cuda.amp.GradScaler(enabled=use_scaler))
    batches = images.shape[0] // a.batch_size

    def step(i):
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
    for i in range(a.warmup):
        step(i)
    sync()
    t0 = time.perf_counter()
    for i in range(a.steps):
        loss = step(a.warmup + i)
    sync()
    seconds = time.perf_counter() - t0
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    print(f"TORCH_RESNET_RESULT images_per_second={a.steps * a.batch_size / seconds:.1f} "
          f"step_ms={1000 * seconds / a.steps:.2f} device={name.replace(' ', '_')} batch_size={a.batch_size} "
          f"precision={a.precision} torch={torch.__version__} final_loss={loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
