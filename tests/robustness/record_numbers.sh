#!/usr/bin/env bash
# The run's totals live inside its checkpoints: a checkpoint copied alone to
# another folder resumes with them (its results as recorded are the first
# run's), and the owner record beside a checkpoint holds its identity only.
# An older version's record carried the totals; no number read from one is
# used before it is checked against the limits of its meaning: a record
# hand-edited to a negative, huge or non-finite total (train-seconds -1e9,
# nan, an accuracy of 7) is refused when a run continues from it (exit code
# 6, one error line naming the record and the key), never carried into the
# RESULT line.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/../e2e/common.sh"

common=(--data "$E2E_DATA" --epochs 1 --batch-size 16 --eval false --log-every 1000 --metrics "" --resume auto)
opts=("${common[@]}" --output model.pth --checkpoint-dir ck)
mpi 1 "$CIFAR_MPI" "${opts[@]}" --max-steps 2 >train.log 2>&1 || { cat train.log; fail "training failed"; }
checkpoint=$(find ck -name 'ckpt-*.pt' | sort | tail -n 1)
record=ck/.$(basename "$checkpoint").run
[[ -f $record ]] || fail "the run wrote no owner record"
! grep -q "seconds\|images\|accuracy" "$record" || { cat "$record"; fail "the owner record holds the run's totals"; }
echo "ok: the owner record holds identity only: $(tr '\n' ' ' <"$record")"

# The checkpoint alone, in a folder of its own: the run is finished there,
# and its results as recorded are the first run's.
mkdir alone && cp "$checkpoint" alone/
mpi 1 "$CIFAR_MPI" "${common[@]}" --max-steps 2 --checkpoint-dir alone --output alone.pth >alone.log 2>&1 ||
  { cat alone.log; fail "the copied checkpoint did not resume"; }
result=$(grep -o 'train_seconds=[0-9]*\.[0-9]* images_per_second=[0-9]*\.[0-9]*' train.log)
recorded=$(grep -o 'Its results as recorded: train_seconds=[0-9]*\.[0-9]* images_per_second=[0-9]*\.[0-9]*' alone.log) ||
  { cat alone.log; fail "the copied checkpoint's run did not say it is finished"; }
[[ $recorded == "Its results as recorded: $result" ]] ||
  { cat alone.log; fail "the copy's totals are not the run's: '$recorded', the run's RESULT '$result'"; }
echo "ok: the checkpoint copied alone keeps its totals: $result"

# edited KEY VALUE: an older version's record holding KEY VALUE is refused on resume.
cp "$record" record.orig
edited() {
  local key=$1 value=$2 rc=0
  { cat record.orig && echo "$key $value"; } >"$record"
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
