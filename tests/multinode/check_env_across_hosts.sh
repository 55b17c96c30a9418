#!/usr/bin/env bash
# tests/multinode/check_env_across_hosts.sh <cifar_mpi> <hosts> <ranks-per-host> <data.h5>
# `cifar_mpi --check-env --backend mpi` across the simulated hosts must place
# every rank on its own host's node with the right node and local rank, name
# each host by its own hostname, and end ready to train.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/../../dev/netns
# shellcheck source=dev/netns/netns_common.sh
source "$netns/netns_common.sh"
program=$1 hosts=$2 per_host=$3 data=$4
size=$((hosts * per_host))

out=$("$netns/run_across_hosts.sh" --hosts "$hosts" "$per_host" "$program" --check-env --backend mpi --data "$data" 2>&1) || {
  echo "$out"
  echo "FAIL: cifar_mpi --check-env exited non-zero across $hosts hosts"
  exit 1
}
echo "$out"

failures=0
for ((r = 0; r < size; r++)); do
  node=$((r / per_host)) local=$((r % per_host))
  want="host=$(netns_name "$node") rank=$r/$size node=$node/$hosts local_rank=$local/$per_host device=cpu backend=mpi"
  if ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL: no line for rank $r: expected '$want'"
    failures=$((failures + 1))
  fi
done
grep -qF "$size rank(s) on $hosts node(s)" <<<"$out" || { echo "FAIL: MPI line does not say $size rank(s) on $hosts node(s)"; failures=$((failures + 1)); }
grep -qx "ready to train" <<<"$out" || { echo "FAIL: no 'ready to train'"; failures=$((failures + 1)); }
((failures == 0)) || exit 1
echo "PASS: $size ranks placed on $hosts hosts, $per_host per host"
