#!/usr/bin/env bash
# No number read from an owner record is used before it is checked against
# the limits of its meaning: a checkpoint's record hand-edited to a negative,
# huge or non-finite total (train-seconds -1e9, nan, an accuracy of 7) is
# refused when a run continues from it (exit code 6, one error line naming the
# record and the key), never carried into the RESULT line.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/../e2e/common.sh"

opts=(--data "$E2E_DATA" --epochs 1 --batch-size 16 --eval false --log-every 1000 --metrics ""
  --output model.pth --checkpoint-dir ck --resume auto)
mpi 1 "$CIFAR_MPI" "${opts[@]}" --max-steps 2 >train.log 2>&1 || { cat train.log; fail "training failed"; }
checkpoint=$(find ck -name 'ckpt-*.pt' | sort | tail -n 1)
record=ck/.$(basename "$checkpoint").run
[[ -f $record ]] || fail "the run wrote no owner record"
cp "$record" record.orig

# edited KEY VALUE: the record with KEY set to VALUE is refused on resume.
edited() {
  local key=$1 value=$2 rc=0
  sed "s/^$key .*/$key $value/" record.orig >"$record"
  grep -q "^$key $value\$" "$record" || fail "the record has no $key line"
  mpi 1 "$CIFAR_MPI" "${opts[@]}" --max-steps 3 >resume.log 2>&1 || rc=$?
  [[ $rc == 6 ]] || { cat resume.log; fail "$key $value: exited $rc, expected 6"; }
  [[ $(grep -c 'error:' resume.log) == 1 ]] || { cat resume.log; fail "$key $value: expected one error line"; }
  grep -qF "owner record $(cd ck && pwd)/.$(basename "$checkpoint").run" resume.log ||
    grep -qF "owner record $record" resume.log || { cat resume.log; fail "$key $value: the error names no record"; }
  grep -qF "holds $key $value, which is not" resume.log || { cat resume.log; fail "$key $value: the key is not named"; }
  ! grep -q "RESULT" resume.log || { cat resume.log; fail "$key $value: a RESULT line was printed"; }
  echo "ok: $(grep -o 'error: .*' resume.log | cut -c1-220)"
}
edited train-seconds -1e9
edited train-seconds nan
edited eval-seconds inf
edited images -5
edited test-accuracy 7

# The record as written: the run continues, one step longer.
cp record.orig "$record"
mpi 1 "$CIFAR_MPI" "${opts[@]}" --max-steps 3 >resume.log 2>&1 || { cat resume.log; fail "the sound record was refused"; }
grep -q "^RESULT train_seconds=[0-9]" resume.log || { cat resume.log; fail "no RESULT line"; }
echo "ok: the record as written continues"
