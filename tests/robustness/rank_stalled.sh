#!/usr/bin/env bash
# A rank that stalls (SIGSTOP) mid-training: the others' gradient all-reduce
# waits --comm-timeout seconds, then they report the collective by step and
# bucket, and the job ends with exit code 4 (communication timeout) within
# --comm-timeout + 10 s, leaving no rank behind. Prints the detection time.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"
# shellcheck source=tests/robustness/faults.sh
source "$here/faults.sh"
readonly victim=2 timeout_s=3 slack_s=10

start_run --comm-timeout "$timeout_s"
wait_until_training
pid=$(rank_pid "$victim")
echo "stopping rank $victim (PID $pid) with SIGSTOP"
fault_started=$(date +%s.%N)
kill -STOP "$pid"
wait_for_end $((timeout_s + 30))
cat run.log
echo "job ended ${end_seconds} s after rank $victim was stopped (--comm-timeout $timeout_s), exit code $job_rc"
((job_rc == 4)) || fail "exit code $job_rc, expected 4 (communication timeout)"
awk -v t="$end_seconds" -v l="$((timeout_s + slack_s))" 'BEGIN { exit !(t < l) }' ||
  fail "the job took ${end_seconds} s to end (limit --comm-timeout + ${slack_s} s)"
awk -v t="$end_seconds" -v l="$timeout_s" 'BEGIN { exit !(t >= l) }' ||
  fail "the job ended after ${end_seconds} s, before --comm-timeout ${timeout_s} s could expire"
# "[rank 0/4 host] error: [rank 0/4 host] all_reduce of ... (step 57 bucket 0/1) did not complete within 3.0 s"
report='error: .*all_reduce .*\(step [0-9]+ bucket [0-9]+/[0-9]+\) did not complete within 3\.0 s \(--comm-timeout\)'
grep -qE "$report" run.log || fail "no communication-timeout report naming the step and bucket"
# The ranks that wait report first; the stopped one may add its own report
# when Open MPI continues it (SIGCONT) to end it.
if grep -E "$report" run.log | head -n 1 | grep -q "^\[rank $victim/"; then
  fail "the first timeout report comes from the stopped rank $victim"
fi
expect_no_rank_left
echo "PASS: stalling rank $victim ended the job in ${end_seconds} s (--comm-timeout ${timeout_s} s) with exit code $job_rc"
echo "report: $(grep -E "$report" run.log | head -n 1)"
