#!/usr/bin/env bash
# Preemption: SIG$1 (USR1 or TERM), sent twice to rank 1 alone of a 2-rank
# run mid-training, stops both ranks at the same step boundary with a
# checkpoint and exit code 3 (no MPI_Abort); --resume auto then runs to the
# end, and the final parameters equal an uninterrupted run's bit for bit.
#   preempt.sh WORK reference   the uninterrupted run, WORK/reference.pth
#                               (ctest's fixture checkpoint.preempt_reference)
#   preempt.sh WORK USR1|TERM   the test; the reference is the one in
#                               WORK/../preempt_reference, shared by both signals
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh" "$1"
signal=${2:?usage: preempt.sh WORK reference|USR1|TERM}

# 512 samples / 2 ranks / 32 = 8 steps per epoch; 50 steps cross several
# epochs. The signal lands a few steps after step 2 (steps 5 and 6 measured),
# far from the end.
opts=(--metrics "" --eval false --model convnet --optimizer sgd --momentum 0.9 --lr 0.05 --schedule cosine --seed 7 --augment true
  --batch-size 32 --epochs 1000 --max-steps 50 --checkpoint-every-epochs 0)
if [[ $signal == reference ]]; then
  train 2 reference.log "${opts[@]}" --log-every 1000 --output reference.pth
  echo "PASS: reference.pth, 50 steps uninterrupted"
  exit 0
fi
reference=$(dirname "$WORK")/preempt_reference/reference.pth
[[ -s $reference ]] || fail "no $reference: run the fixture test checkpoint.preempt_reference first"

marker=$WORK/interrupted.pth  # unique on this machine: finds this run's ranks
run 2 interrupted.log "${opts[@]}" --output "$marker" --checkpoint-dir ckpt --log-every 1 &
launcher=$!
for _ in $(seq 600); do
  grep -q 'Batch: 2/' interrupted.log 2>/dev/null && break
  kill -0 $launcher 2>/dev/null || break
  sleep 0.05
done
# Looked for until found while the run lives: under a heavy load /proc can
# briefly miss a rank (seen once in CI at a load average of 16 on 2 cores).
rank1=
while [[ -z $rank1 ]] && kill -0 $launcher 2>/dev/null; do
  rank1=$(rank_pid_of "$marker" 1)
  [[ -n $rank1 ]] || sleep 0.05
done
[[ -n $rank1 ]] || { pgrep -af -- "--output $marker" || true; wait $launcher; cat interrupted.log
  fail "rank 1 of the run not found"; }
echo "sending SIG$signal twice to rank 1 (pid $rank1)"
kill -s "$signal" "$rank1"
sleep 0.02
kill -s "$signal" "$rank1" 2>/dev/null || true
expect_preempted $launcher interrupted.log
expect_in interrupted.log "preempted by SIG$signal: stopping at step [0-9]+ with checkpoint"
grep -m1 'preempted by' interrupted.log
[[ ! -f $marker ]] || fail "a preempted run must not write the final model"
checkpoint=$(ls ckpt/ckpt-*.pt)
[[ $(wc -w <<<"$checkpoint") == 1 ]] || fail "expected one checkpoint, found: $checkpoint"
step=$(sed -n 's/.*-s0*\([0-9][0-9]*\)\.pt/\1/p' <<<"$checkpoint")
((step > 0 && step < 50)) || fail "checkpoint $checkpoint is not mid-run"

train 2 resumed.log "${opts[@]}" --log-every 1000 --output "$marker" --checkpoint-dir ckpt --resume auto
expect_in resumed.log "resumed from checkpoint $checkpoint"
identical "$reference" "$marker" "uninterrupted 50 steps == SIG$signal at step $step, exit 3, --resume auto"
echo PASS
