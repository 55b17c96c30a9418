#!/usr/bin/env bash
# jobs/local_mpirun.sh: every launch gets its own run folder by default, and
# SIGTERM or SIGINT to the launcher stops the run with a checkpoint and exit
# code 3, leaving no rank running.
# (Open MPI's mpirun, sent SIGTERM itself, returns 1 even after the ranks
# checkpointed and exited 3; the script passes SIGTERM on as SIGUSR1, which
# mpirun forwards and whose exit code it passes on.) Resuming with the
# printed CIFAR_RUN_DIR continues the run.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"

CIFAR_BUILD=$(dirname "$CIFAR_MPI")
export CIFAR_BUILD CIFAR_CONFIG='' CIFAR_DATA=$E2E_DATA
export CIFAR_MPIRUN_ARGS="--oversubscribe --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none"
unset CIFAR_RUN_DIR
launcher=
trap '[[ -z $launcher ]] || kill -9 $launcher 2>/dev/null || true' EXIT

# start_launcher LOG: an endless run under jobs/local_mpirun.sh in the
# background, once it has trained 3 batches. Job control keeps SIGINT
# deliverable to it (without it, bash starts background jobs ignoring SIGINT).
start_launcher() {
  set -m
  CIFAR_EXTRA_ARGS="--batch-size 8 --epochs 100000 --eval false --log-every 1" \
    bash "$SOURCE_DIR/jobs/local_mpirun.sh" -n 2 -c 1 >"$1" 2>&1 &
  launcher=$!
  set +m
  for _ in $(seq 1200); do
    (($(grep -c 'Batch: ' "$1" || true) >= 3)) && break
    kill -0 $launcher 2>/dev/null || { cat "$1"; fail "the run ended before it trained"; }
    sleep 0.1
  done
}
# stop_launcher SIGNAL LOG: sends SIGNAL to the launcher, which must exit 3
# after saying it asked the ranks to checkpoint and stop.
stop_launcher() {
  kill -s "$1" $launcher
  local rc=0
  wait $launcher || rc=$?
  launcher=
  [[ $rc == 3 ]] || { cat "$2"; fail "SIG$1 to jobs/local_mpirun.sh: exit code $rc, expected 3"; }
  grep -q "SIG$1: asking the ranks to checkpoint and stop" "$2" || { cat "$2"; fail "no SIG$1 note"; }
}

start_launcher first.log
stop_launcher TERM first.log
grep -m1 'preempted by SIGUSR1: stopping at step' first.log || { cat first.log; fail "the ranks did not checkpoint"; }
run_dir=$(run_folder_of first.log)
[[ $run_dir == "$PWD"/runs/local-* && -n $(ls "$run_dir"/checkpoints/ckpt-*.pt) ]] ||
  fail "expected a checkpoint in a per-launch run folder, got '$run_dir'"
echo "SIGTERM -> exit 3 with $(ls "$run_dir"/checkpoints) in $run_dir"

# SIGINT (Ctrl-C) stops alike, and the launcher waits for its ranks: none
# goes on training unsupervised.
start_launcher int.log
int_dir=$(run_folder_of int.log)
stop_launcher INT int.log
if pgrep -f -- "--output $int_dir/" >/dev/null; then fail "ranks of the interrupted launch are still running"; fi
[[ -n $(ls "$int_dir"/checkpoints/ckpt-*.pt) ]] || fail "SIGINT: no checkpoint in $int_dir"
echo "SIGINT -> exit 3 with $(ls "$int_dir"/checkpoints), no rank left running"

# Another launch: another folder; the first launch's folder resumes when named.
# The two are independent (each its own run folder): side by side.
second_launch() {
  CIFAR_EXTRA_ARGS="--batch-size 8 --epochs 1 --max-steps 2 --eval false" \
    bash "$SOURCE_DIR/jobs/local_mpirun.sh" -n 2 -c 1 >second.log 2>&1 || { cat second.log; fail "second launch failed"; }
}
background second.out second_launch
step=$(find "$run_dir"/checkpoints -mindepth 1 -maxdepth 1 -name '[!.]*' -printf '%f\n' | sed -n 's/.*-s0*\([0-9][0-9]*\)\.pt/\1/p' | sort -n | tail -1)
CIFAR_RUN_DIR=$run_dir CIFAR_EXTRA_ARGS="--batch-size 8 --epochs 100000 --max-steps $((step + 2)) --eval false" \
  bash "$SOURCE_DIR/jobs/local_mpirun.sh" -n 2 -c 1 >resumed.log 2>&1 || { cat resumed.log; fail "resume failed"; }
wait_background "the second launch failed"
second_dir=$(run_folder_of second.log)
[[ -n $second_dir && $second_dir != "$run_dir" && -f $second_dir/model.pth ]] ||
  fail "the second launch did not get its own run folder: '$second_dir' vs '$run_dir'"
grep -q "resumed from checkpoint $run_dir/checkpoints/" resumed.log || { cat resumed.log; fail "did not resume"; }
[[ -f $run_dir/model.pth ]] || fail "the resumed run wrote no model"
echo PASS
