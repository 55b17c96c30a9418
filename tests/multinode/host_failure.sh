#!/usr/bin/env bash
# tests/multinode/host_failure.sh <allreduce-loop program>
# Losing a host mid-job must end the whole job: start a 2 hosts x 2 ranks job
# that all-reduces for 60 s, kill -9 every process of cifar-host1 once all
# ranks are busy, and require that mpirun exits non-zero well before the job
# would have finished, with a message naming the lost host. Prints the time
# from the kill to the end of the job.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/../../tools/netns
# shellcheck source=tools/netns/netns_common.sh
source "$netns/netns_common.sh"
program=$1
readonly ranks=4 victim=1 job_seconds=60 ready_limit_s=60 end_limit_s=30

log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$netns/run_across_hosts.sh" --hosts 2 2 "$program" "$job_seconds" >"$log" 2>&1 &
job=$!

fail() {
  cat "$log"
  echo "FAIL: $*"
  kill -9 "$job" 2>/dev/null || true
  exit 1
}

# Every rank has finished its first all-reduce: the job spans both hosts.
for ((i = 0; i < ready_limit_s * 10; i++)); do
  (($(grep -c ' ready$' "$log" || true) == ranks)) && break
  kill -0 "$job" 2>/dev/null || fail "the job ended before all $ranks ranks were ready"
  sleep 0.1
done
(($(grep -c ' ready$' "$log" || true) == ranks)) || fail "not all $ranks ranks were ready within ${ready_limit_s} s"

victim_ns=$(netns_name "$victim")
mapfile -t pids < <(ip netns pids "$victim_ns")
((${#pids[@]} > 0)) || fail "no processes found in $victim_ns"
echo "killing ${#pids[@]} process(es) of $victim_ns (orted and its ranks): ${pids[*]}"
start=$(date +%s.%N)
kill -9 "${pids[@]}"

ended=0
for ((i = 0; i < end_limit_s * 100; i++)); do
  if ! kill -0 "$job" 2>/dev/null; then
    ended=1
    break
  fi
  sleep 0.01
done
stop=$(date +%s.%N)
((ended)) || fail "the job still runs ${end_limit_s} s after $victim_ns was lost"
rc=0
wait "$job" || rc=$?
detect=$(awk -v a="$start" -v b="$stop" 'BEGIN { printf "%.2f", b - a }')
cat "$log"
echo "job ended ${detect} s after the kill with exit code $rc"

((rc != 0)) || fail "the job exited 0 although $victim_ns was lost"
grep -q ' done after ' "$log" && fail "a rank finished its run normally: the kill came too late"
# Open MPI names the lost daemon's node ("Remote daemon: [[x,0],1] on node ...").
grep -qE "on node ($victim_ns|$(netns_addr "$victim"))" "$log" ||
  fail "the failure report does not name the lost host $victim_ns"
echo "PASS: losing $victim_ns ended the job in ${detect} s (limit ${end_limit_s} s) with exit code $rc"
