#!/usr/bin/env bash
# jobs/local_mpirun.sh honours a stop at any moment of a launch: SIGTERM,
# SIGUSR1 or SIGINT at 0.1, 0.3, 0.5 and 1 s after its start (before mpirun,
# while the ranks load LibTorch, while they start MPI) ends in exit code 3,
# with no rank left running and no rank killed by the signal; a Ctrl-C (SIGINT
# to the launch's whole process group, as a terminal sends it) alike; and a
# second Ctrl-C ends the ranks at once with exit code 130, the launcher's,
# not a crash report of mpirun's read as the program's.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"

CIFAR_BUILD=$(dirname "$CIFAR_MPI")
export CIFAR_BUILD CIFAR_CONFIG='' CIFAR_DATA=$E2E_DATA CIFAR_MAX_RESTARTS=0
export CIFAR_MPIRUN_ARGS="--oversubscribe --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none"
export CIFAR_EXTRA_ARGS="--batch-size 8 --epochs 100000 --eval false --log-every 1"
unset CIFAR_RUN_DIR
launcher=
trap '[[ -z $launcher ]] || kill -9 -- -$launcher 2>/dev/null || true' EXIT

# launch LOG: an endless run under jobs/local_mpirun.sh in the background,
# in its own process group (job control), as a terminal's foreground job is.
launch() {
  set -m
  bash "$SOURCE_DIR/jobs/local_mpirun.sh" -n 2 -c 1 >"$1" 2>&1 &
  launcher=$!
  set +m
}
# finish LOG: waits for the launcher, its exit code in rc; fails when a rank
# of its run folder is still running.
finish() {
  local dir
  rc=0
  wait "$launcher" || rc=$?
  launcher=
  dir=$(run_folder_of "$1")
  if [[ -n $dir ]] && pgrep -f -- "--output $dir/" >/dev/null; then
    cat "$1"
    fail "ranks of $dir are still running after the launcher ended"
  fi
}
# expect_stop LOG RC WHAT: exit code 3, and no rank ended by a signal.
expect_stop() {
  [[ $2 == 3 ]] || { cat "$1"; fail "$3: exit code $2, expected 3 (stopped)"; }
  ! grep -qE 'signal [0-9]+ \((User defined signal 1|Terminated)\)|exited on signal' "$1" ||
    { cat "$1"; fail "$3: a rank was killed by the signal"; }
}

cases=("0.1 TERM" "0.3 USR1" "0.5 INT" "1.0 TERM" "1.0 USR1")
for case in "${cases[@]}"; do
  read -r delay signal <<<"$case"
  log=$signal-$delay.log
  launch "$log"
  sleep "$delay"
  kill -s "$signal" "$launcher"
  finish "$log"
  expect_stop "$log" "$rc" "SIG$signal at $delay s"
  echo "SIG$signal at $delay s -> exit 3: $(grep -m1 -oE 'SIG[A-Z0-9]+ (before the launch|while the ranks start)[^;]*|preempted by SIG[A-Z0-9]+[^.]*' "$log" || true)"
done

# Ctrl-C: SIGINT to the whole process group (the launcher, mpirun, the ranks).
launch ctrl-c.log
sleep 1
kill -s INT -- "-$launcher"
finish ctrl-c.log
expect_stop ctrl-c.log "$rc" "Ctrl-C at 1 s"
echo "Ctrl-C at 1 s -> exit 3"

# Two Ctrl-Cs, once the ranks train: the second ends them at once, exit 130.
launch twice.log
for _ in $(seq 1200); do
  (($(grep -c 'Batch: ' twice.log || true) >= 2)) && break
  kill -0 "$launcher" 2>/dev/null || { cat twice.log; fail "the run ended before it trained"; }
  sleep 0.1
done
kill -s INT -- "-$launcher"
sleep 0.3
kill -s INT -- "-$launcher"
finish twice.log
[[ $rc == 130 ]] || { cat twice.log; fail "two Ctrl-Cs: exit code $rc, expected 130"; }
grep -q 'SIGINT again: ending the ranks now' twice.log || { cat twice.log; fail "no note of the second SIGINT"; }
! grep -qiE 'segmentation fault|Signal: Segmentation|exit code 139' twice.log ||
  { cat twice.log; fail "two Ctrl-Cs: a crash report"; }
echo "two Ctrl-Cs -> exit 130, no crash report"
echo PASS
