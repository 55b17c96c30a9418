#!/usr/bin/env bash
# Divergence: SGD at --lr 1e30 makes the first update overflow the
# parameters, and from the next step on the loss and gradient are NaN, on
# every rank alike; Adam at --lr 1e6 explodes the loss with finite gradients.
#  * --on-nonfinite stop (default): every rank stops at the same step, exit
#    code 5, one error line naming the step; the checkpoints are those of the
#    good steps only, no model file, and no metrics row;
#  * skip: the bad steps are skipped and counted, but 15 of 16 skipped (over
#    --max-skipped-fraction 0.5) with a NaN test loss is a failed run: exit
#    code 5 at the epoch's end, no model file, no RESULT, no metrics row;
#  * skip with --max-skipped-fraction 1 and no evaluation: epoch 0 (one good
#    step) is written as JSON that tools/plot_metrics draws; epoch 1, every
#    step skipped, has no finite training loss: exit code 5;
#  * Adam at --lr 1e6: no step is non-finite, but the losses pass --max-loss
#    100: exit code 5, no model file;
#  * Muon at --muon-lr 1e300: exit code 5, the advice naming Muon's rates.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"

# 1024 samples / 2 ranks / 32 = 16 steps per epoch.
opts=(--data "$E2E_DATA" --model convnet --optimizer sgd --momentum 0 --lr 1e30 --batch-size 32 --log-every 1000)
# expect_failed NAME PATTERN: NAME.log ended with exit code 5 ($rc), one error
# line matching PATTERN, and neither a model file nor a RESULT line.
expect_failed() {
  [[ $rc == 5 ]] || { cat "$1.log"; fail "$1: exited $rc, expected 5"; }
  [[ $(grep -c 'error:' "$1.log") == 1 ]] || { cat "$1.log"; fail "$1: expected one error line"; }
  grep -Eq "error: training diverged: $2" "$1.log" || { cat "$1.log"; fail "$1: the error does not say /$2/"; }
  grep -o 'error: .*' "$1.log" | cut -c1-240
  [[ ! -e $1.pth ]] || fail "$1: a failed run wrote its model"
  if grep -q '^RESULT' "$1.log"; then fail "$1: a failed run printed RESULT"; fi
}
# Two runs at a time: each is mostly start-up and mpirun's wait after its ranks exit 5.
stop_run() {
  rc=0
  mpi 2 "$CIFAR_MPI" "${opts[@]}" --epochs 2 --output stop.pth --metrics stop.jsonl --checkpoint-dir ckpt \
    --checkpoint-every-steps 1 --keep-checkpoints 100 >stop.log 2>&1 || rc=$?
  expect_failed stop 'the averaged gradient of optimiser step 2 is not finite \(NaN or infinity\); stopped with exit code 5.*start a new run \(without --resume, or with another --checkpoint-dir\) with a lower --lr'
}
background stop_run.out stop_run

rc=0
mpi 2 "$CIFAR_MPI" "${opts[@]}" --epochs 2 --on-nonfinite skip --output skip.pth --metrics skip.jsonl >skip.log 2>&1 ||
  rc=$?
expect_failed skip "epoch 0 ended with a mean test loss that is not finite \(NaN\), and 15 of the run's 16 optimiser steps so far skipped for a non-finite gradient \(94%, more than --max-skipped-fraction 0.5\)"
grep -q 'step 2: the averaged gradient is not finite; update skipped (--on-nonfinite skip, 1 skipped so far)' skip.log ||
  { cat skip.log; fail "the first skipped step is not reported"; }
[[ ! -s skip.jsonl ]] || { cat skip.jsonl; fail "the failed epoch has a metrics row"; }

wait_background "the diverged run did not stop as expected"
[[ $(ls ckpt) == "ckpt-e0000-s000001.pt" ]] || fail "expected only the good step's checkpoint, found: $(ls ckpt)"
[[ ! -e stop.jsonl ]] || fail "a diverged run wrote its metrics"

adam_run() {
  rc=0
  mpi 2 "$CIFAR_MPI" --data "$E2E_DATA" --model convnet --optimizer adam --lr 1e6 --batch-size 32 --max-steps 4 \
    --output adam.pth >adam.log 2>&1 || rc=$?
  expect_failed adam 'epoch 0 ended with a mean training loss of [0-9.]+e\+[0-9]+, above --max-loss 100, and a mean test loss of [0-9.]+e\+[0-9]+, above --max-loss 100; stopped with exit code 5'
  if grep -q 'not finite' adam.log; then fail "Adam's steps should be finite"; fi
}
background adam_run.out adam_run

rc=0
mpi 2 "$CIFAR_MPI" "${opts[@]}" --epochs 2 --on-nonfinite skip --max-skipped-fraction 1 --eval false \
  --output lenient.pth --metrics lenient.jsonl >lenient.log 2>&1 || rc=$?
expect_failed lenient 'epoch 1 ended with a mean training loss that is not finite \(NaN\); stopped with exit code 5'
cat lenient.jsonl
"$PYTHON" - lenient.jsonl <<'PY'
import json, sys
def refuse(token):
    raise ValueError(f"not JSON: {token}")
rows = [json.loads(line, parse_constant=refuse) for line in open(sys.argv[1])]
assert [(r["epoch"], r["skipped_steps"]) for r in rows] == [(0, 15)], rows
assert rows[0]["train_loss"] > 0, rows
PY
"$PYTHON" "$SOURCE_DIR/tools/plot_metrics" lenient.jsonl --output lenient.png || fail "plot_metrics refused the metrics file"
wait_background "the exploding Adam run did not fail as expected"

# Muon at --muon-lr 1e300: the advice names Muon's own rates, not only --lr.
rc=0
mpi 2 "$CIFAR_MPI" --data "$E2E_DATA" --model convnet --optimizer muon --muon-lr 1e300 --batch-size 32 --max-steps 4 \
  --output muon.pth >muon.log 2>&1 || rc=$?
expect_failed muon '.*start a new run \(without --resume, or with another --checkpoint-dir\) with a lower --muon-lr or --muon-weight-decay'
echo PASS
