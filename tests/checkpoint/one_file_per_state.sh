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
# expect_files NAME EXPECTED WHAT [options...]: a run into checkpoint folder
# NAME leaves exactly the checkpoints EXPECTED.
expect_files() {
  local name=$1 expected=$2 what=$3 files
  train 2 "$name.log" "${opts[@]}" "${@:4}" --output "$name.pth" --checkpoint-dir "$name"
  files=$(find "$name" -name 'ckpt-*.pt' -printf '%f\n' | sort | tr '\n' ' ')
  [[ $files == "$expected " ]] || fail "$what: expected one file per state, got: $files"
  echo "$what: $files"
}
expect_files epochs "ckpt-e0000-s000002.pt ckpt-e0001-s000004.pt ckpt-e0001-s000006.pt ckpt-e0002-s000008.pt" \
  "2 epochs of 4 steps, --checkpoint-every-steps 2" --epochs 2
expect_files steps "ckpt-e0000-s000002.pt ckpt-e0001-s000004.pt ckpt-e0001-s000006.pt" \
  "--max-steps 6, mid-epoch" --epochs 2 --max-steps 6
echo PASS
