// Binding a GPU rank to its GPU's NUMA node (see numa_binding.hpp).
#include "placement/numa_binding.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "placement/placement_rules.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

NumaBinding not_bound(const std::string& why) { return NumaBinding{{}, "not bound: " + why}; }

bool has_cpu(const std::vector<int>& cpus, int cpu) { return std::find(cpus.begin(), cpus.end(), cpu) != cpus.end(); }

// Whether the launcher left the rank alone: it may run on every CPU it is allowed.
bool launcher_did_not_bind(const NumaTopology& t) {
  return std::all_of(t.allowed_cpus.begin(), t.allowed_cpus.end(),
                     [&](int cpu) { return has_cpu(t.current_cpus, cpu); });
}

// The CPUs of NUMA node `numa` that the rank may use, lowest first.
std::vector<int> usable_cpus(const NumaTopology& t, int numa) {
  std::vector<int> cpus;
  for (int cpu : t.numa_cpus[static_cast<size_t>(numa)])
    if (has_cpu(t.allowed_cpus, cpu) && has_cpu(t.current_cpus, cpu)) cpus.push_back(cpu);
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

// The node's ranks on NUMA node `numa`, by local rank: who shares its CPUs.
std::vector<int> ranks_on(const NumaTopology& t, int numa) {
  std::vector<int> ranks;
  for (size_t local = 0; local < t.node_gpu_numa.size(); ++local)
    if (t.node_gpu_numa[local] == numa) ranks.push_back(static_cast<int>(local));
  return ranks;
}

// Share `position` of `parts` of `cpus`, in order; the first shares take one
// CPU more when they do not divide evenly.
std::vector<int> share_of(const std::vector<int>& cpus, int position, int parts) {
  const int n = static_cast<int>(cpus.size());
  const int base = n / parts, extra = n % parts;
  const int begin = position * base + std::min(position, extra);
  const int length = base + (position < extra ? 1 : 0);
  return std::vector<int>(cpus.begin() + begin, cpus.begin() + begin + length);
}

// Whether this rank computes on a GPU (Placement::node_gpus names one for it).
bool on_gpu(const World& world, const std::vector<std::string>& node_gpus) {
  const auto local = static_cast<size_t>(world.local_rank);
  return local < node_gpus.size() && !node_gpus[local].empty();
}

}  // namespace

NumaBinding decide_numa_binding(const NumaTopology& t) {
  const auto local = static_cast<size_t>(t.local_rank);
  if (t.gpu.empty() || local >= t.node_gpu_numa.size()) return not_bound("computes on the CPU");
  const int numa = t.node_gpu_numa[local];
  if (numa < 0) return not_bound("the NUMA node of GPU " + t.gpu + " is unknown");
  if (numa >= static_cast<int>(t.numa_cpus.size()) || t.numa_cpus[static_cast<size_t>(numa)].empty())
    return not_bound(strprintf("the CPUs of NUMA node %d (GPU %s) are unknown", numa, t.gpu.c_str()));
  if (t.numa_cpus.size() < 2) return not_bound("the node has one NUMA node");
  if (!launcher_did_not_bind(t)) return not_bound("the launcher bound it to CPUs " + format_cpu_list(t.current_cpus));
  const std::vector<int> cpus = usable_cpus(t, numa);
  if (cpus.empty())
    return not_bound(strprintf("none of NUMA node %d's CPUs (%s) is allowed to it (allowed: %s)", numa,
                               format_cpu_list(t.numa_cpus[static_cast<size_t>(numa)]).c_str(),
                               format_cpu_list(t.allowed_cpus).c_str()));
  const std::vector<int> sharing = ranks_on(t, numa);
  const int parts = static_cast<int>(sharing.size());
  if (parts > static_cast<int>(cpus.size()))
    return not_bound(strprintf("%d ranks share the %zu CPU(s) %s of NUMA node %d", parts, cpus.size(),
                               format_cpu_list(cpus).c_str(), numa));
  const int position = static_cast<int>(std::find(sharing.begin(), sharing.end(), t.local_rank) - sharing.begin());
  NumaBinding binding;
  binding.cpus = share_of(cpus, position, parts);
  binding.text = strprintf("bound to CPUs %s (NUMA node %d of GPU %s)", format_cpu_list(binding.cpus).c_str(), numa,
                           t.gpu.c_str());
  return binding;
}

NumaTopology probe_numa_topology(const World& world, const std::vector<std::string>& node_gpus,
                                 const ProbeRoots& roots) {
  NumaTopology t;
  t.numa_cpus = read_numa_cpus(roots.sys);
  t.allowed_cpus = read_allowed_cpus(roots);
  t.current_cpus = bound_cpus();
  for (const std::string& gpu : node_gpus)
    t.node_gpu_numa.push_back(gpu.empty() ? -1 : read_pci_numa_node(roots.sys, gpu));
  t.local_rank = world.local_rank;
  if (static_cast<size_t>(world.local_rank) < node_gpus.size())
    t.gpu = node_gpus[static_cast<size_t>(world.local_rank)];
  return t;
}

NumaBinding plan_numa_binding(const World& world, const std::vector<std::string>& node_gpus, BindNuma mode) {
  if (mode == BindNuma::Off) return not_bound("--bind-numa false");
  if (!on_gpu(world, node_gpus)) return not_bound("computes on the CPU");
  try {
    return decide_numa_binding(probe_numa_topology(world, node_gpus));
  } catch (const Error& e) {  // a sysfs file the kernel wrote otherwise: training runs unbound
    return not_bound(e.what());
  }
}

NumaBinding bind_near_gpu(const World& world, const std::vector<std::string>& node_gpus, BindNuma mode) {
  NumaBinding binding = plan_numa_binding(world, node_gpus, mode);
  if (binding.binds()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : binding.cpus) CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
      binding = not_bound(
          strprintf("the kernel refused CPUs %s (%s)", format_cpu_list(binding.cpus).c_str(), std::strerror(errno)));
  }
  if (on_gpu(world, node_gpus)) log::rank_line(binding.text);
  return binding;
}

}  // namespace cifar
