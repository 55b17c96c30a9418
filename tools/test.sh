#!/usr/bin/env bash
# tools/test.sh — everything a newcomer or CI needs to run all tests:
# install system packages, configure and build the `cpu` preset, run ctest.
# Extra arguments go to ctest (e.g. tools/test.sh -L unit, or -R sampler).
set -euo pipefail
cd "$(dirname "$0")/.."

preset=${CIFAR_PRESET:-cpu}
bash tools/setup.sh
jobs=$(nproc)
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$jobs"
# MPI tests run several ranks each; run them one at a time on small machines.
ctest --preset "$preset" -j 1 --timeout 600 "$@"
