"""Prints, ';'-separated, the CUDA runtime that this python's torch loads from
PyPI's nvidia-* wheels: torch's CUDA version, the wheel's libcudart, then
every include folder of the nvidia-* wheels. Prints nothing for a CPU torch
or a torch whose CUDA does not come from wheels (a LibTorch built elsewhere
finds its toolkit itself). Read by cmake/Dependencies.cmake."""
import glob
import os
import sys

import torch

if not torch.version.cuda:
    sys.exit(0)
try:
    import nvidia
except ImportError:
    sys.exit(0)
major = torch.version.cuda.split(".")[0]
roots = list(nvidia.__path__)
# CUDA 13 wheels share one tree (nvidia/cu13/); CUDA 12's have a folder each.
cudarts = sorted(glob.glob(os.path.join(roots[0], "cu" + major, "lib", "libcudart.so." + major))
                 + glob.glob(os.path.join(roots[0], "cuda_runtime", "lib", "libcudart.so." + major)))
if not cudarts:
    sys.exit(f"torch {torch.__version__} (CUDA {torch.version.cuda}): no libcudart.so.{major} in {roots[0]}")
includes = sorted(d for d in glob.glob(os.path.join(roots[0], "*", "include")) if os.path.isdir(d))
print(";".join([torch.version.cuda, cudarts[0]] + includes), end="")
