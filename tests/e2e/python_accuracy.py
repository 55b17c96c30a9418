#!/usr/bin/env python3
"""Load a cifar_mpi model file into the PyTorch DDP recipe's ConvNet with
torch.load + load_state_dict and print its accuracy on the HDF5 test split
(normalised as the recipe: x/255, then mean 0.5 std 0.5), to 4 decimals."""
import os
import sys

import h5py
import torch

# The recipe's ConvNet, kept once for the Python-side tests and tools (dev/bench/cifar_models.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dev", "bench"))
from cifar_models import ConvNet  # noqa: E402


def main(model_path, data_path):
    model = ConvNet()
    model.load_state_dict(torch.load(model_path, weights_only=True))  # PyTorch 2.6's default
    model.eval()
    with h5py.File(data_path, "r") as f:
        images = torch.from_numpy(f["test/images"][:]).float()
        labels = torch.from_numpy(f["test/labels"][:]).long()
    x = (images / 255.0 - 0.5) / 0.5
    with torch.no_grad():
        correct = (model(x).argmax(1) == labels).sum().item()
    print(f"{correct / len(labels):.4f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
