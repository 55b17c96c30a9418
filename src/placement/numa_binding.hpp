// Keeping a GPU rank on its GPU's socket. A launcher that does not bind
// (srun --cpu-bind=none, mpirun --bind-to none) leaves every rank free to run
// on every CPU of the node, and the kernel moves its threads across sockets:
// on a two-socket node half of each rank's host-device copies and data
// loading then cross the socket link. With --bind-numa auto, training binds
// such a rank once at start-up, before its thread pools are sized, to the
// CPUs of its GPU's NUMA node that it may use, shared out among the node's
// ranks whose GPUs sit on that NUMA node, so that they do not overlap. It
// never binds a rank its launcher bound, a rank on the CPU, or one whose
// GPU's NUMA node is unknown; nor on a node with one NUMA node, where
// nothing is far.
//
// decide_numa_binding is a pure function of the node's topology, tested on
// made-up machines (tests/placement/numa_binding_test.cpp); the rest reads
// the live node and applies the decision.
#pragma once

#include <string>
#include <vector>

#include "config/choices.hpp"
#include "mpi/world.hpp"
#include "placement/topology_probe.hpp"

namespace cifar {

// What the decision looks at, for one rank.
struct NumaTopology {
  std::vector<std::vector<int>> numa_cpus;  // the CPUs of each NUMA node; empty when unknown
  std::vector<int> allowed_cpus;            // the CPUs the process may use: its cgroup's, else every CPU online
  std::vector<int> current_cpus;            // its CPU affinity now
  // For each rank of the node, by local rank: the NUMA node of the GPU it
  // computes on; -1 on the CPU or where unknown.
  std::vector<int> node_gpu_numa;
  int local_rank = 0;
  std::string gpu;  // the PCI bus id of this rank's GPU, for the message; "" on the CPU
};

struct NumaBinding {
  std::vector<int> cpus;  // the CPUs to bind to; empty: leave the rank as it is
  std::string text;       // "bound to CPUs 0-23 (NUMA node 0 of GPU 0000:3b:00.0)", or "not bound: <why>"
  bool binds() const { return !cpus.empty(); }
};

NumaBinding decide_numa_binding(const NumaTopology& topology);

// The live node's topology for this rank: sysfs, its affinity, its cgroup,
// and where each rank of the node computes (Placement::node_gpus: PCI bus
// ids by local rank, "" on the CPU).
NumaTopology probe_numa_topology(const World& world, const std::vector<std::string>& node_gpus,
                                 const ProbeRoots& roots = {});

// What --bind-numa `mode` does to this rank, without doing it (--check-env).
NumaBinding plan_numa_binding(const World& world, const std::vector<std::string>& node_gpus, BindNuma mode);

// Training's start-up: decides, binds the calling thread (the threads it
// starts later inherit the binding) and logs the outcome on one line per
// rank on a GPU. Not collective. A binding the kernel refuses is logged and
// training goes on unbound.
NumaBinding bind_near_gpu(const World& world, const std::vector<std::string>& node_gpus, BindNuma mode);

}  // namespace cifar
