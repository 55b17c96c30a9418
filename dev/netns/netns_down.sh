#!/usr/bin/env bash
# dev/netns/netns_down.sh — remove the simulated cluster: end every process
# still running inside its namespaces, then delete the namespaces (which takes
# their veth pairs and the bridge with them). Idempotent: removes whatever is
# left of a cluster, and succeeds when nothing is.
set -euo pipefail
# shellcheck source=dev/netns/netns_common.sh
source "$(dirname "$0")/netns_common.sh"
netns_require_root

mapfile -t namespaces < <(ip netns list | awk '{print $1}' | grep -E "^(${NETNS_PREFIX}[0-9]+|${NETNS_SWITCH})$" || true)
for ns in "${namespaces[@]}"; do
  # A namespace with live processes outlives `ip netns del` (and keeps its
  # addresses); a test that failed half-way may have left ranks behind.
  netns_kill_all_in "$ns"
done
for ns in "${namespaces[@]}"; do
  ip netns del "$ns" 2>/dev/null || true
done
rm -rf "$NETNS_STATE_DIR"

left=$(ip netns list | awk '{print $1}' | grep -E "^(${NETNS_PREFIX}[0-9]+|${NETNS_SWITCH})$" || true)
[[ -z $left ]] || netns_die "could not remove namespace(s): $left"
echo "netns: simulated cluster removed (${#namespaces[@]} namespace(s))"
