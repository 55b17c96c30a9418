#!/usr/bin/env bash
# tests/multinode/host_loss.sh <allreduce-loop program> kill|partition
# Losing a host mid-job must end the whole job: start a 2 hosts x 2 ranks job
# that all-reduces for 60 s, take cifar-host1 away once all ranks are busy,
# and require that mpirun exits non-zero well before the job would have
# finished, with a report that names the lost host. Prints the time from the
# loss to the end of the job.
#   kill       kill -9 every process of cifar-host1 (a crashed node: its
#              sockets close, so the loss is seen at once)
#   partition  unplug cifar-host1's port from the switch (a dead link or a
#              powered-off node: nothing is closed, only TCP keepalive on
#              Open MPI's daemon connections notices, set here to 2 s idle +
#              3 probes 1 s apart, as in restart_host_loss.sh; Open MPI's
#              default is 300 s + 9 x 20 s)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/../../dev/netns
# shellcheck source=dev/netns/netns_common.sh
source "$netns/netns_common.sh"
program=$1 mode=$2
readonly ranks=4 victim=1 job_seconds=60 ready_limit_s=60 end_limit_s=30
victim_ns=$(netns_name "$victim")
victim_port=$(netns_port "$victim")

mpirun_options=()
case $mode in
  kill) ;;
  partition)
    mpirun_options=(--mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1
                    --mca oob_tcp_keepalive_probes 3 --) ;;
  *) netns_die "mode must be kill or partition, got '$mode'" ;;
esac

log=$(mktemp)
job=
# Whatever happened, leave the cluster as the next test expects it: the port
# plugged in again and nothing of this job left running on any host (the
# RESOURCE_LOCK guarantees that every process there is this job's).
restore() {
  [[ -z $job ]] || kill -9 "$job" 2>/dev/null
  ip -n "$NETNS_SWITCH" link set "$victim_port" up 2>/dev/null
  for ((k = 0; k < 2; k++)); do netns_kill_all_in "$(netns_name "$k")"; done
  rm -f "$log"
}
trap 'restore || true' EXIT

"$netns/run_across_hosts.sh" --hosts 2 2 "${mpirun_options[@]}" "$program" "$job_seconds" >"$log" 2>&1 &
job=$!

fail() {
  cat "$log"
  echo "FAIL: $*"
  exit 1
}

# Every rank has finished its first all-reduce: the job spans both hosts.
ready() { (($(grep -c ' ready$' "$log" || true) == ranks)); }
for ((i = 0; i < ready_limit_s * 10; i++)); do
  ready && break
  kill -0 "$job" 2>/dev/null || fail "the job ended before all $ranks ranks were ready"
  sleep 0.1
done
ready || fail "not all $ranks ranks were ready within ${ready_limit_s} s"

start=$(date +%s.%N)
if [[ $mode == kill ]]; then
  mapfile -t pids < <(ip netns pids "$victim_ns")
  ((${#pids[@]} > 0)) || fail "no processes found in $victim_ns"
  echo "killing ${#pids[@]} process(es) of $victim_ns (orted and its ranks): ${pids[*]}"
  kill -9 "${pids[@]}"
else
  echo "unplugging $victim_ns from the switch"
  ip -n "$NETNS_SWITCH" link set "$victim_port" down
fi

ended=0
for ((i = 0; i < end_limit_s * 100; i++)); do
  if ! kill -0 "$job" 2>/dev/null; then
    ended=1
    break
  fi
  sleep 0.01
done
stop=$(date +%s.%N)
((ended)) || fail "the job still runs ${end_limit_s} s after $victim_ns was lost ($mode)"
rc=0
wait "$job" || rc=$?
job=
detect=$(awk -v a="$start" -v b="$stop" 'BEGIN { printf "%.2f", b - a }')
cat "$log"
echo "job ended ${detect} s after the loss of $victim_ns ($mode) with exit code $rc"

((rc != 0)) || fail "the job exited 0 although $victim_ns was lost"
if grep -q ' done after ' "$log"; then fail "a rank finished its run normally: the loss came too late"; fi
# Open MPI names the lost daemon's node: "Remote daemon: [[x,0],1] on node cifar-host1".
grep -qE "Remote daemon: .* on node $victim_ns\$" "$log" ||
  fail "the failure report does not name the lost host $victim_ns"
echo "PASS: losing $victim_ns ($mode) ended the job in ${detect} s (limit ${end_limit_s} s) with exit code $rc"
