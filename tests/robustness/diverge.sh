#!/usr/bin/env bash
# Divergence (--on-nonfinite): SGD at --lr 1e30 makes the first update
# overflow the parameters, and from the next step on the loss and gradient
# are NaN, on every rank alike.
#  * stop (default): every rank stops at the same step, exit code 5, one
#    error line naming the step; the checkpoints are those of the good steps
#    only, no model file, and no metrics row;
#  * skip: the bad steps are skipped and counted; the metrics file holds
#    only JSON (null, never nan or inf) that tools/plot_metrics draws.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"

# 1024 samples / 2 ranks / 32 = 16 steps per epoch.
opts=(--data "$E2E_DATA" --model convnet --optimizer sgd --momentum 0 --lr 1e30 --batch-size 32 --log-every 1000)
# The two runs are independent; the stopped one, mostly start-up and
# mpirun's wait after its ranks exit 5, runs in the background meanwhile.
stop_run() {
  local rc=0
  mpi 2 "$CIFAR_MPI" "${opts[@]}" --epochs 2 --output stop.pth --metrics stop.jsonl --checkpoint-dir ckpt \
    --checkpoint-every-steps 1 --keep-checkpoints 100 >stop.log 2>&1 || rc=$?
  [[ $rc == 5 ]] || { cat stop.log; fail "a diverged run exited $rc, expected 5"; }
}
background stop_run.out stop_run

rc=0
mpi 2 "$CIFAR_MPI" "${opts[@]}" --epochs 2 --on-nonfinite skip --output skip.pth --metrics skip.jsonl >skip.log 2>&1 ||
  rc=$?
[[ $rc == 0 ]] || { cat skip.log; fail "--on-nonfinite skip exited $rc"; }

wait_background "the diverged run did not stop as expected"
[[ $(grep -c 'error:' stop.log) == 1 ]] || { cat stop.log; fail "expected one error line"; }
grep -q 'error: training diverged: the averaged gradient of optimiser step 2 is not finite (NaN or infinity); stopped with exit code 5' stop.log ||
  { cat stop.log; fail "the error does not name step 2"; }
grep -o 'error: .*' stop.log | cut -c1-200
[[ $(ls ckpt) == "ckpt-e0000-s000001.pt" ]] || fail "expected only the good step's checkpoint, found: $(ls ckpt)"
[[ ! -e stop.pth && ! -e stop.jsonl ]] || fail "a diverged run wrote its model or metrics"

grep -q 'step 2: the averaged gradient is not finite; update skipped (--on-nonfinite skip, 1 skipped so far)' skip.log ||
  { cat skip.log; fail "the first skipped step is not reported"; }
grep -q '^31 optimiser step(s) skipped for a non-finite gradient' skip.log || { cat skip.log; fail "no count of skips"; }
cat skip.jsonl
"$PYTHON" - skip.jsonl <<'PY'
import json, sys
def refuse(token):
    raise ValueError(f"not JSON: {token}")
rows = [json.loads(line, parse_constant=refuse) for line in open(sys.argv[1])]
assert [r["skipped_steps"] for r in rows] == [15, 31], rows
assert [r["epoch"] for r in rows] == [0, 1], rows
assert rows[0]["train_loss"] > 0 and rows[1]["train_loss"] is None, rows  # epoch 1: no finite loss, no mean
PY
"$PYTHON" "$SOURCE_DIR/tools/plot_metrics" skip.jsonl --output skip.png || fail "plot_metrics refused the metrics file"
echo PASS
