#!/usr/bin/env python3
"""Runs the airbench94 peer (airbench94.py, from a copy of airbench) on CPUs.

The peer is written for one CUDA GPU in fp16. To learn what accuracy its
recipe reaches on a data set (the shared archive was rebuilt from JPEG
copies and may cap accuracy below the published 94%) without a GPU, this
runs the unchanged script with its few GPU calls redirected to the CPU, in
float32:

* ``.cuda()`` of modules and tensors returns them unchanged;
* ``.half()`` of modules is a no-op and of tensors gives float32 (CPU
  convolutions have no fast fp16 path);
* ``torch.load(..., map_location=cuda)`` loads onto the CPU;
* ``torch.cuda.Event`` and ``torch.cuda.synchronize`` time with the host
  clock, so the printed seconds are CPU seconds of wall time.

Nothing of the recipe (network, optimiser, schedule, augmentation, TTA) is
touched. An accuracy benchmark, run by hand; its times say nothing about GPUs.

    python3 make_data.py cifar-10-binary.tar.gz DATA   # the peer's data maker
    AIRBENCH_DATA=DATA AIRBENCH_RUNS=1 /usr/bin/python3 dev/bench/airbench_cpu.py [airbench94.py]

Needs torch and torchvision (Debian's python3-torch and python3-torchvision).
"""
import os
import runpy
import sys
import time

import torch

AIRBENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "bench", "airbench",
                        "airbench94.py")


class HostEvent:
    """torch.cuda.Event's timing interface on the host clock."""

    def __init__(self, enable_timing=True):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3  # milliseconds, as CUDA events report


def redirect_gpu_calls_to_cpu():
    torch.nn.Module.cuda = lambda self, *args, **kwargs: self
    torch.nn.Module.half = lambda self: self
    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    torch.Tensor.half = lambda self, *args, **kwargs: self.float()
    load = torch.load
    torch.load = lambda path, *args, map_location=None, **kwargs: load(path, *args, map_location="cpu", **kwargs)
    torch.cuda.Event = HostEvent
    torch.cuda.synchronize = lambda *args, **kwargs: None


def main():
    script = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else AIRBENCH)
    if not os.path.isfile(script):
        sys.exit(f"airbench_cpu: {script} not found; pass the path of airbench94.py")
    redirect_gpu_calls_to_cpu()
    if "OMP_NUM_THREADS" not in os.environ:  # Debian's torch may default to one thread per physical core
        torch.set_num_threads(os.cpu_count())
    print(f"airbench_cpu: {script} on the CPU, float32, {torch.get_num_threads()} thread(s), torch {torch.__version__}",
          flush=True)
    sys.argv = [script]  # the script logs its own source from argv[0]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
