#!/usr/bin/env bash
# dev/netns/netns_up.sh [N] — build a simulated cluster of N hosts (default
# 2, at most 3) on this machine: namespaces cifar-host0..N-1, each with
# loopback and eth0 = 10.77.0.(10+K)/24, joined by a bridge in namespace
# cifar-sw. Replaces any cluster left over from an earlier run. Waits until
# every link is up and every bridge port forwards before it reports success.
set -euo pipefail
here=$(dirname "$0")
# shellcheck source=dev/netns/netns_common.sh
source "$here/netns_common.sh"
netns_require_root

hosts=${1:-2}
if ! [[ $hosts =~ ^[0-9]+$ ]] || ((hosts < 1 || hosts > NETNS_MAX_HOSTS)); then
  netns_die "number of hosts must be 1..$NETNS_MAX_HOSTS, got '$hosts'"
fi

"$here/netns_down.sh" >/dev/null
# A failure half-way leaves nothing behind.
remove_on_failure() {
  local rc=$?
  ((rc == 0)) || "$here/netns_down.sh" >/dev/null 2>&1 || true
  exit "$rc"
}
trap remove_on_failure EXIT

# IPv6 off: the hosts then speak only IPv4 on 10.77.0.0/24 (no link-local
# addresses, no router solicitations).
no_ipv6() {
  ip netns exec "$1" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
}

ip netns add "$NETNS_SWITCH" || netns_die "'ip netns add' failed: this machine does not allow network namespaces (needs CAP_SYS_ADMIN)"
no_ipv6 "$NETNS_SWITCH"
ip -n "$NETNS_SWITCH" link set lo up
ip -n "$NETNS_SWITCH" link add "$NETNS_BRIDGE" type bridge
ip -n "$NETNS_SWITCH" link set "$NETNS_BRIDGE" up

for ((k = 0; k < hosts; k++)); do
  ns=$(netns_name "$k")
  ip netns add "$ns"
  no_ipv6 "$ns"
  ip -n "$ns" link set lo up
  # Both ends are created where they live: the root namespace never sees them.
  ip -n "$NETNS_SWITCH" link add "$(netns_port "$k")" type veth peer name eth0 netns "$ns"
  ip -n "$NETNS_SWITCH" link set "$(netns_port "$k")" master "$NETNS_BRIDGE" up
  ip -n "$ns" addr add "$(netns_addr "$k")/24" dev eth0
  ip -n "$ns" link set eth0 up
done

mkdir -p "$NETNS_STATE_DIR"
echo "$hosts" >"$NETNS_STATE_DIR/hosts"

# The links need a moment to come up; wait until every host's eth0 is up and
# every bridge port forwards (no STP, so that is immediate once linked).
for _ in $(seq 50); do
  ready=1
  for ((k = 0; k < hosts; k++)); do
    [[ $(ip -n "$(netns_name "$k")" -br link show eth0 | awk '{print $2}') == UP ]] || ready=0
    bridge -n "$NETNS_SWITCH" link show dev "$(netns_port "$k")" | grep -q "state forwarding" || ready=0
  done
  ((ready)) && break
  sleep 0.1
done
((ready)) || netns_die "the simulated links did not come up within 5 s: $(bridge -n "$NETNS_SWITCH" link show)"
echo "netns: $hosts simulated host(s) up: $(for ((k = 0; k < hosts; k++)); do printf '%s=%s ' "$(netns_name "$k")" "$(netns_addr "$k")"; done)"
