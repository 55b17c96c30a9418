#!/usr/bin/env python3
"""Load a cifar_mpi model file into the reference recipe's ConvNet with
torch.load + load_state_dict and print its accuracy on the HDF5 test split
(normalised as the recipe: x/255, then mean 0.5 std 0.5), to 4 decimals."""
import sys

import h5py
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvNet(nn.Module):  # the recipe's network, verbatim (bench/seed_ddp.py)
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(64 * 6 * 6, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, 64 * 6 * 6)
        return self.fc2(F.relu(self.fc1(x)))


def main(model_path, data_path):
    model = ConvNet()
    model.load_state_dict(torch.load(model_path))
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
