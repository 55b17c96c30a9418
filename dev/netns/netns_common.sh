# shellcheck shell=bash disable=SC2034  # constants are used by the scripts that source this
# dev/netns/netns_common.sh — the one definition of the simulated cluster
# (namespace names, subnet, host addresses) shared by every netns script.
# Sourced, not run. Hosts are numbered from 0: host K is namespace
# cifar-hostK, hostname cifar-hostK, address 10.77.0.(10+K)/24. A separate
# namespace cifar-sw holds the bridge that joins them, so nothing is added to
# the root namespace's links, addresses or routes, and the hosts have no route
# beyond 10.77.0.0/24: their traffic cannot leave the simulated cluster.
# Hostfiles name the hosts (cifar-hostK, needing no name resolution: the
# launch agent maps names and addresses to namespaces), so Open MPI reports
# failures by host name.

readonly NETNS_PREFIX=cifar-host
readonly NETNS_SWITCH=cifar-sw
readonly NETNS_BRIDGE=br0
readonly NETNS_SUBNET=10.77.0.0/24
readonly NETNS_MAX_HOSTS=3
readonly NETNS_STATE_DIR=/run/cifar-netns   # number of hosts of the live cluster

netns_die() {
  echo "netns: $*" >&2
  exit 1
}

netns_name() { echo "${NETNS_PREFIX}$1"; }
netns_addr() { echo "10.77.0.$((10 + $1))"; }
netns_port() { echo "port$1"; }  # host K's port on the bridge, in cifar-sw

# Root and a working `ip netns` are preconditions, not optional extras: say
# which one is missing and how to get it.
netns_require_root() {
  [[ $(id -u) -eq 0 ]] || netns_die "needs root (network namespaces); run as root or through sudo"
  command -v ip >/dev/null || netns_die "'ip' not found; install iproute2 (tools/setup.sh does)"
  command -v unshare >/dev/null || netns_die "'unshare' not found; install util-linux (tools/setup.sh does)"
}

# The number of hosts of the cluster that netns_up.sh built, or fail.
netns_live_hosts() {
  local n
  n=$(cat "$NETNS_STATE_DIR/hosts" 2>/dev/null) ||
    netns_die "no simulated cluster is up; run dev/netns/netns_up.sh first"
  ip netns list | grep -q "^$(netns_name 0)\b" ||
    netns_die "namespace $(netns_name 0) is gone; run dev/netns/netns_up.sh again"
  echo "$n"
}

# kill -9 every process running in namespace $1 (none is fine).
netns_kill_all_in() {
  local pids
  mapfile -t pids < <(ip netns pids "$1" 2>/dev/null || true)
  ((${#pids[@]} == 0)) || kill -9 "${pids[@]}" 2>/dev/null || true
}

# Map a host as Open MPI names it (address, name, or name with a domain) to
# its index, or fail naming the host.
netns_host_index() {
  local host=$1 n k
  n=$(netns_live_hosts) || exit 1
  for ((k = 0; k < n; k++)); do
    if [[ $host == "$(netns_addr "$k")" || $host == "$(netns_name "$k")" || $host == "$(netns_name "$k")".* ]]; then
      echo "$k"
      return 0
    fi
  done
  netns_die "host '$host' is not one of the $n simulated hosts ($(netns_addr 0)..$(netns_addr $((n - 1))))"
}

# Run a command as simulated host K: inside its network namespace and in a
# fresh UTS namespace whose hostname is the host's name (`ip netns exec` alone
# keeps the machine's hostname, and Open MPI reports the hostname).
netns_exec_as_host() {
  local k=$1
  shift
  # shellcheck disable=SC2016  # $0 and $@ belong to the inner shell
  exec ip netns exec "$(netns_name "$k")" unshare --uts \
    sh -c 'hostname "$0" && exec "$@"' "$(netns_name "$k")" "$@"
}
