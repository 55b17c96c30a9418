#!/usr/bin/env bash
# dev/netns/run_across_hosts.sh [--hosts H] <ranks-per-host> [mpirun options... --] <command...>
# Run an MPI command across the first H hosts (default: all) of the simulated
# cluster that netns_up.sh built: mpirun itself runs as host 0 (inside cifar-host0, so it
# reaches the other hosts' daemons over 10.77.0.0/24 without any route in the
# root namespace), and starts the daemons of the other hosts through
# netns_agent instead of ssh. Open MPI talks TCP between hosts and shared
# memory only within a host. Exits with mpirun's exit code.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=dev/netns/netns_common.sh
source "$here/netns_common.sh"
netns_require_root

usage="usage: run_across_hosts.sh [--hosts H] <ranks-per-host> [mpirun options... --] <command...>"
live=$(netns_live_hosts)
hosts=$live
if [[ ${1:-} == --hosts ]]; then
  [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || netns_die "$usage"
  hosts=$2
  ((hosts <= live)) || netns_die "--hosts $hosts: only $live simulated host(s) are up (dev/netns/netns_up.sh $hosts)"
  shift 2
fi
[[ $# -ge 2 && $1 =~ ^[1-9][0-9]*$ ]] || netns_die "$usage"
per_host=$1
shift
mpirun_extra=()
# Words that start with '-' right after the count are mpirun's, up to "--".
if [[ $1 == -* ]]; then
  while [[ $# -gt 0 && $1 != -- ]]; do
    mpirun_extra+=("$1")
    shift
  done
  [[ $# -ge 2 ]] || netns_die "mpirun options must end with '--' followed by the command; $usage"
  shift
fi

hostfile=$(mktemp "$NETNS_STATE_DIR/hostfile.XXXXXX")
trap 'rm -f "$hostfile"' EXIT
for ((k = 0; k < hosts; k++)); do
  echo "$(netns_name "$k") slots=$per_host"
done >"$hostfile"

# shellcheck disable=SC2054  # commas separate MCA values, not array elements
mpirun_cmd=(
  mpirun --allow-run-as-root --hostfile "$hostfile"
  -np $((per_host * hosts)) --map-by "ppr:$per_host:node" --bind-to none
  --mca plm_rsh_agent "$here/netns_agent"
  # Every daemon is started by mpirun itself: a tree spawn would have host 1
  # launch host 2, which works too but makes failures harder to read.
  --mca plm_rsh_no_tree_spawn 1
  --mca oob_tcp_if_include "$NETNS_SUBNET"
  --mca btl self,vader,tcp --mca btl_tcp_if_include "$NETNS_SUBNET"
  --mca btl_vader_single_copy_mechanism none
  -x OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
  "${mpirun_extra[@]}"
  "$@"
)
# Not exec: the hostfile is removed when mpirun ends.
set +e
(netns_exec_as_host 0 "${mpirun_cmd[@]}")
rc=$?
exit $rc
