#!/usr/bin/env bash
# --target-accuracy stops the run at the first evaluation that reaches the
# target, prints TIME_TO_TARGET with the training-plus-evaluation time, and
# records it in that epoch's metrics row; --eval-every-epochs skips the
# evaluations in between (their rows hold null), and a target never reached
# trains the whole run.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"

train() {
  local name=$1
  shift
  mpi 2 "$CIFAR_MPI" --data "$E2E_DATA" --batch-size 32 --log-every 1000 --output "$name.pth" \
    --metrics "$name.jsonl" "$@" >"$name.log" 2>&1 || { cat "$name.log"; fail "$name: training failed"; }
}

# The synthetic classes are learnable: 0.5 is reached within a few epochs of 10.
train reached --epochs 10 --target-accuracy 0.5 --lr 0.002
line=$(grep '^TIME_TO_TARGET' reached.log) || { cat reached.log; fail "no TIME_TO_TARGET line"; }
echo "$line"
epochs=$(sed -nE 's/.* epochs=([0-9]+).*/\1/p' <<<"$line")
accuracy=$(sed -nE 's/.* accuracy=([0-9.]+).*/\1/p' <<<"$line")
seconds=$(sed -nE 's/.*seconds=([0-9.]+).*/\1/p' <<<"$line")
((epochs >= 1 && epochs < 10)) || fail "expected an early stop, got epochs=$epochs"
awk -v a="$accuracy" 'BEGIN {exit !(a >= 0.5)}' || fail "stopped at accuracy $accuracy below the target"
[[ $(wc -l <reached.jsonl) == "$epochs" ]] || fail "the metrics file should end at epoch $epochs"
"$PYTHON" - reached.jsonl "$seconds" <<'PY' || fail "metrics row without the time to target"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert "time_to_target" not in rows[0] or len(rows) == 1, rows
last = rows[-1]
assert abs(last["time_to_target"] - float(sys.argv[2])) < 0.01, last
assert abs(last["time_to_target"] - last["train_eval_seconds"]) < 1e-9, last
PY
grep -q '^RESULT ' reached.log || fail "no RESULT line after the early stop"
[[ -s reached.pth ]] || fail "no model file after the early stop"

# Evaluating every 3rd epoch of 4: epochs 2 and 3 (the last) are scored, 0 and 1 are null.
# A learning rate too small to learn anything keeps the accuracy near chance.
train sparse --epochs 4 --eval-every-epochs 3 --target-accuracy 0.9 --lr 1e-9
grep -q '^TIME_TO_TARGET' sparse.log && fail "an unreachable target was reported reached"
"$PYTHON" - sparse.jsonl <<'PY' || fail "wrong evaluations with --eval-every-epochs 3"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["test_accuracy"] is not None for r in rows] == [False, False, True, True], rows
PY
echo "PASS"
