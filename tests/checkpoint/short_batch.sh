#!/usr/bin/env bash
# An elastic resume whose epoch ends with a short micro-batch that does not
# divide among the new ranks: 100 samples on 4 ranks x 6 (micro-batch 24),
# checkpointed at step 2 (global position 48); on 3 ranks the rest is two
# micro-batches of 24 (steps 3 and 4), then 4 samples, which do not divide
# among 3.
#   * --max-steps 4 ends the run before the short micro-batch: resumed,
#     2 steps trained, exit 0;
#   * without it the run would reach it: refused before any training with
#     exit code 6 (bad input: no restart fixes it), one error line naming
#     it, and no "resumed from" line before the refusal.
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"

"$CIFAR_PACK" --synthetic 100 --test-count 16 --seed 3 --output short.h5 >pack.log 2>&1 || { cat pack.log; fail "cifar_pack"; }
CKPT_DATA=$PWD/short.h5
opts=("${quiet[@]}" --model convnet --optimizer sgd --lr 0.05 --epochs 1 --batch-size 6)

train 4 four.log "${opts[@]}" --output four.pth --checkpoint-dir ckpt --max-steps 2
mid=ckpt/ckpt-e0000-s000002.pt
[[ -f $mid ]] || fail "no step-2 checkpoint: $(ls ckpt)"

train 3 stops_before.log "${opts[@]}" --output stops_before.pth --resume "$mid" --max-steps 4
expect_in stops_before.log "resumed from checkpoint $mid"
expect_in stops_before.log 'continued on 3 rank\(s\) with 8 per rank'
[[ -f stops_before.pth ]] || fail "the resume that stops before the short micro-batch wrote no model"

rc=0
run 3 reaches.log "${opts[@]}" --output reaches.pth --resume "$mid" || rc=$?
[[ $rc == 6 ]] || { cat reaches.log; fail "the resume that reaches the short micro-batch exited $rc, expected 6"; }
expect_in reaches.log "error: checkpoint '$mid': the rest of epoch 0 \(positions \[48, 100\) of its order\) ends with a micro-batch of 4 samples, which do not divide among 3 ranks"
[[ $(grep -c 'error:' reaches.log) == 1 ]] || { cat reaches.log; fail "expected one error line"; }
if grep -q 'resumed from' reaches.log; then cat reaches.log; fail "'resumed from' was printed before the refusal"; fi
[[ ! -e reaches.pth ]] || fail "the refused resume wrote a model"
grep -o 'error: .*' reaches.log | cut -c1-200
echo PASS
