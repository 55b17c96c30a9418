#!/usr/bin/env bash
# One state, one checkpoint file: --checkpoint-every-steps 2 on epochs of 4
# steps (512 images, 2 ranks, batches of 64) is due at each epoch's last
# step too, where the epoch's end writes its own checkpoint; the run writes
# that state once, at the epoch's end (after its evaluation and metrics row),
# not a second file of the same step that counts against --keep-checkpoints.
# The same for a --max-steps end mid-epoch.
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"

opts=("${quiet[@]}" --model convnet --optimizer sgd --batch-size 64 --checkpoint-every-steps 2 --keep-checkpoints 10)
train 2 epochs.log "${opts[@]}" --epochs 2 --output epochs.pth --checkpoint-dir epochs
files=$(find epochs -name 'ckpt-*.pt' -printf '%f\n' | sort | tr '\n' ' ')
[[ $files == "ckpt-e0000-s000002.pt ckpt-e0001-s000004.pt ckpt-e0001-s000006.pt ckpt-e0002-s000008.pt " ]] ||
  fail "two epochs of 4 steps, a checkpoint every 2: expected one file per state, got: $files"
echo "2 epochs of 4 steps, --checkpoint-every-steps 2: $files"
train 2 steps.log "${opts[@]}" --epochs 2 --max-steps 6 --output steps.pth --checkpoint-dir steps
files=$(find steps -name 'ckpt-*.pt' -printf '%f\n' | sort | tr '\n' ' ')
[[ $files == "ckpt-e0000-s000002.pt ckpt-e0001-s000004.pt ckpt-e0001-s000006.pt " ]] ||
  fail "--max-steps 6 mid-epoch: expected one file per state, got: $files"
echo "--max-steps 6, mid-epoch: $files"
echo PASS
