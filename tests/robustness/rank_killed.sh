#!/usr/bin/env bash
# A rank that dies (kill -9) mid-training ends the whole job: mpirun exits
# non-zero within 10 s, names the dead rank, and no rank is left running.
# Prints the time from the kill to the end of the job.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"
# shellcheck source=tests/robustness/faults.sh
source "$here/faults.sh"
readonly victim=2 limit_s=10

# shellcheck disable=SC2119  # start_run's arguments are extra cifar_mpi options; none here
start_run
wait_until_training
pid=$(rank_pid "$victim")
echo "killing rank $victim (PID $pid) with SIGKILL"
fault_started=$(date +%s.%N)
kill -9 "$pid"
wait_for_end 30
cat run.log
echo "job ended ${end_seconds} s after rank $victim was killed, exit code $job_rc"
((job_rc != 0)) || fail "the job exited 0 although rank $victim died"
awk -v t="$end_seconds" -v l="$limit_s" 'BEGIN { exit !(t < l) }' || fail "the job took ${end_seconds} s to end (limit ${limit_s} s)"
# Open MPI: "mpirun noticed that process rank 2 with PID 1234 on node x exited
# on signal 9 (Killed)." (Open MPI 4.1 may print PID 0 there.)
grep -qE "process rank $victim with PID [0-9]+ on node .* exited on signal 9" run.log ||
  fail "the report does not name rank $victim"
expect_no_rank_left
echo "PASS: killing rank $victim ended the job in ${end_seconds} s (limit ${limit_s} s) with exit code $job_rc"
