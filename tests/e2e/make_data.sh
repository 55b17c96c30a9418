#!/usr/bin/env bash
# Fixture: a small synthetic CIFAR-shaped HDF5 file with learnable classes.
set -euo pipefail
mkdir -p "$1"
"$CIFAR_PACK" --synthetic 1024 --test-count 512 --seed 1 --output "$E2E_DATA"
