#!/usr/bin/env python3
"""Writes tests/data/golden/distributed_sampler.txt: the indices that PyTorch's own
torch.utils.data.distributed.DistributedSampler gives, for the C++ parity test
(tests/data/distributed_sampler_test.cpp), so that the tests need no Python.

Format: '#' lines are comments; every other line is one case,
  N WORLD RANK SEED EPOCH SHUFFLE DROP_LAST : i0 i1 i2 ...
Run with Debian's Python (python3-torch):  /usr/bin/python3 dev/make_sampler_golden.py
"""
import os
import sys

import torch
from torch.utils.data.distributed import DistributedSampler

# (N, world, seed, epochs, shuffle, drop_last): N not divisible by world,
# N smaller than world, several epochs, seeds, and a CIFAR-sized split.
CASES = [
    (10, 1, 0, [0], True, False),
    (10, 3, 0, [0, 1, 2], True, False),
    (10, 3, 0, [0, 1], True, True),
    (10, 3, 0, [0], False, False),
    (10, 3, 0, [0], False, True),
    (3, 4, 7, [0, 5], True, False),
    (3, 4, 7, [0], False, False),
    (101, 4, 42, [0, 3], True, False),
    (101, 4, 42, [0, 3], True, True),
    (256, 8, 1234, [0, 9], True, False),
    (1000, 7, 2**32 + 5, [1], True, False),
    (5000, 16, 0, [1], True, False),
]


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "golden",
                       "distributed_sampler.txt")
    lines = [f"# written by dev/make_sampler_golden.py with torch {torch.__version__}",
             "# N WORLD RANK SEED EPOCH SHUFFLE DROP_LAST : indices"]
    for n, world, seed, epochs, shuffle, drop_last in CASES:
        for epoch in epochs:
            for rank in range(world):
                sampler = DistributedSampler(range(n), num_replicas=world, rank=rank,
                                             shuffle=shuffle, seed=seed, drop_last=drop_last)
                sampler.set_epoch(epoch)
                idx = " ".join(str(i) for i in sampler)
                lines.append(f"{n} {world} {rank} {seed} {epoch} {int(shuffle)} {int(drop_last)} : {idx}")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines) - 2} cases to {os.path.normpath(out)}", file=sys.stderr)


if __name__ == "__main__":
    main()
