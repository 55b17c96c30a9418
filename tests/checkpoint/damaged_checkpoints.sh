#!/usr/bin/env bash
# Damaged content: 400 bytes changed inside a model tensor of the newest
# checkpoint (its zip entry's CRC-32 no longer matches; the file's structure
# is intact). --resume auto skips it with one line naming the file, the
# entry and the older checkpoint it uses instead, and ends with the same
# model as a clean resume from that older one; --resume FILE of it is
# refused (exit 6, one error, nothing trained or written); NaN bytes in a
# tensor are refused as damage too, not trained on.
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"
damage() { "$PYTHON" "$SOURCE_DIR/tests/support/damage_entry.py" "$@"; }

opts=("${quiet[@]}" --model convnet --optimizer sgd --momentum 0.9 --lr 0.05 --seed 4 --batch-size 16 --epochs 1)
train 2 straight.log "${opts[@]}" --output straight.pth --checkpoint-dir ckpt --checkpoint-every-steps 6 \
  --keep-checkpoints 10
older=ckpt/ckpt-e0000-s000012.pt
newest=ckpt/ckpt-e0001-s000016.pt
[[ -f $newest && -f $older ]] || fail "expected checkpoints at steps 12 and 16"
mkdir clean && cp "$older" clean/
entry=$(damage "$newest") || fail "could not damage $newest"
echo "damaged $entry of $newest"

# The clean resume from the older checkpoint, in a folder of its own.
clean_resume() { train 2 clean.log "${opts[@]}" --output clean.pth --checkpoint-dir clean --resume "clean/${older##*/}"; }
background clean_resume.out clean_resume

train 2 auto.log "${opts[@]}" --output auto.pth --checkpoint-dir ckpt --resume auto
expect_in auto.log "skipping checkpoint '$newest' is damaged \(changed after it was written\): zip entry '$entry' does not match its CRC-32.*--resume auto tries the older checkpoint $older instead"
[[ $(grep -c 'skipping' auto.log) == 1 ]] || { cat auto.log; fail "one line should name the skipped file"; }
expect_in auto.log "resumed from checkpoint $older"
grep -m1 'skipping' auto.log | cut -c1-400
wait_background "the clean resume failed"
identical clean.pth auto.pth "damaged newest skipped: the same model as a clean resume from step 12"
identical straight.pth auto.pth "... and as the uninterrupted run"

# --resume FILE of a damaged file: refused, nothing trained or written.
for kind in bytes nan; do
  cp "$older" "named-$kind.pt"
  if [[ $kind == nan ]]; then entry=$(damage --nan "named-$kind.pt"); else entry=$(damage "named-$kind.pt"); fi
  rc=0
  run 2 "path-$kind.log" "${opts[@]}" --output "path-$kind.pth" --resume "named-$kind.pt" || rc=$?
  [[ $rc == 6 ]] || { cat "path-$kind.log"; fail "--resume of a damaged file ($kind) exited $rc, expected 6"; }
  expect_in "path-$kind.log" "checkpoint 'named-$kind.pt' is damaged \(changed after it was written\): zip entry '$entry' does not match its CRC-32"
  [[ $(grep -c 'is damaged' "path-$kind.log") == 1 ]] || { cat "path-$kind.log"; fail "the error should be reported once"; }
  ! grep -Eq 'step|diverg|lower --lr' "path-$kind.log" || { cat "path-$kind.log"; fail "a damaged file was trained on"; }
  [[ ! -e path-$kind.pth ]] || fail "a refused resume wrote its --output"
  grep -m1 'is damaged' "path-$kind.log" | cut -c1-300
done
echo PASS
