#!/usr/bin/env bash
# A checkpoint folder with room for --keep-checkpoints + 1 files keeps taking
# checkpoints after a job was killed between a write and its pruning, which
# leaves one checkpoint too many: the run prunes that surplus before its next
# write. (A tmpfs sized for 4 checkpoints; a keep-4 run leaves 4 in it, as a
# keep-3 run killed before pruning would; the keep-3 run resumed then writes.)
# Mounting needs root (CI runs as root); without it the test reports Skipped.
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "needs root to mount a small tmpfs"; exit 77; }

opts=("${quiet[@]}" --model convnet --optimizer sgd --batch-size 32 --checkpoint-every-steps 1)
train 2 probe.log "${opts[@]}" --max-steps 1 --output probe.pth --checkpoint-dir probe
size=$(stat -c %s probe/ckpt-e0000-s000001.pt)
mkdir ckpt
mount -t tmpfs -o size=$((4 * size / 1024 + 256))k tmpfs ckpt || fail "cannot mount a tmpfs"
trap 'umount ckpt 2>/dev/null || true' EXIT
train 2 four.log "${opts[@]}" --max-steps 4 --keep-checkpoints 4 --output model.pth --checkpoint-dir ckpt
[[ $(find ckpt -name 'ckpt-*.pt' | wc -l) == 4 ]] || fail "expected 4 checkpoints: $(ls ckpt)"
echo "a folder of $(df -k --output=size ckpt | tail -1) KiB holds 4 checkpoints of $size bytes"
train 2 resumed.log "${opts[@]}" --max-steps 6 --keep-checkpoints 3 --output model.pth --checkpoint-dir ckpt \
  --resume auto
[[ $(find ckpt -name 'ckpt-*.pt' -printf '%f\n' | sort | tr '\n' ' ') == \
  "ckpt-e0000-s000004.pt ckpt-e0000-s000005.pt ckpt-e0000-s000006.pt " ]] ||
  fail "expected the newest 3 checkpoints: $(ls ckpt)"
echo PASS
