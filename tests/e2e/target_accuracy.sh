#!/usr/bin/env bash
# --target-accuracy stops the run at the first evaluation that reaches the
# target, prints TIME_TO_TARGET with the training-plus-evaluation time, and
# records it in that epoch's metrics row; --eval-every-epochs skips the
# evaluations in between (their rows hold null), and a target never reached
# trains the whole run and says so (TARGET_NOT_REACHED, exit code 0).
# With checkpoints, a run resumed for a target counts the whole run's time
# (both segments) in TIME_TO_TARGET, and a run that reached its target, run
# again with the same command, is finished: it trains nothing, changes no
# file and prints no second TIME_TO_TARGET or RESULT.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"

train() {  # train NAME [options...]: logs to NAME.log, writes NAME.pth and NAME.jsonl unless OUTPUT names them
  local name=$1 output=${OUTPUT:-$1}
  shift
  mpi 2 "$CIFAR_MPI" --data "$E2E_DATA" --batch-size 32 --log-every 1000 --output "$output.pth" \
    --metrics "$output.jsonl" "$@" >"$name.log" 2>&1 || { cat "$name.log"; fail "$name: training failed"; }
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
grep -Eq '^TARGET_NOT_REACHED target=0.9000 accuracy=[0-9.]+ epochs=4 steps=64: --target-accuracy 0.9 was not reached' \
  sparse.log || { cat sparse.log; fail "the unreached target was not reported"; }
"$PYTHON" - sparse.jsonl <<'PY' || fail "wrong evaluations with --eval-every-epochs 3"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["test_accuracy"] is not None for r in rows] == [False, False, True, True], rows
PY

# Epoch 0 without a target, then the same run resumed for one.
segments=(--lr 0.002 --checkpoint-dir ckpt --resume auto)
train first "${segments[@]}" --epochs 1
cp first.jsonl whole.jsonl
train whole "${segments[@]}" --epochs 10 --target-accuracy 0.5
line=$(grep '^TIME_TO_TARGET' whole.log) || { cat whole.log; fail "no TIME_TO_TARGET after the resume"; }
echo "$line"
"$PYTHON" - whole.jsonl "$(sed -nE 's/.*seconds=([0-9.]+).*/\1/p' <<<"$line")" <<'PY' || fail "TIME_TO_TARGET left out a segment"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
trained = sum(r["epoch_seconds"] for r in rows)  # every epoch of both segments
assert float(sys.argv[2]) >= trained - 0.01, (sys.argv[2], trained, rows)
assert abs(rows[-1]["time_to_target"] - float(sys.argv[2])) < 0.01, rows[-1]
PY
state() { md5sum whole.pth whole.jsonl ckpt/*; }
before=$(state)
OUTPUT=whole train again "${segments[@]}" --epochs 10 --target-accuracy 0.5
grep -Eq "^the run is already finished: ckpt/ckpt-e[0-9]+-s[0-9]+.pt is its end \(--target-accuracy 0.5 reached at epoch [0-9]+ with test accuracy [0-9.]+\); nothing to train. Its results as recorded: train_seconds=" \
  again.log || { cat again.log; fail "the finished run did not say so"; }
! grep -Eq '^(TIME_TO_TARGET|RESULT)' again.log || { cat again.log; fail "the finished run reported a second result"; }
[[ $(state) == "$before" ]] || fail "the finished run changed its files"
echo "ok: $(grep -o '^the run is already finished.*' again.log | cut -c1-300)"
echo "PASS"
