// Judging where a job's ranks landed (`cifar_mpi --check-env`): per rank and
// per node, whether GPUs, cores, NUMA nodes, thread counts, NCCL's network
// settings and the launcher's binding fit together. A job that starts with a
// bad placement still trains, only slower (or fails later, in NCCL's
// bootstrap), so each problem is a warning that says how to fix it;
// `--check-env --strict` turns warnings into a failing exit code for job
// scripts.
//
// Every rule is a pure function of one RankTopology per rank, so each is
// tested with made-up machines (tests/placement/placement_rules_test.cpp);
// placement/topology_probe.hpp fills a RankTopology from the live process.
#pragma once

#include <string>
#include <vector>

namespace cifar {

// Who started the rank, as far as its environment tells.
enum class Launcher { Unknown, Mpirun, Srun };

// What one rank sees of its placement.
struct RankTopology {
  int rank = 0;
  int local_rank = 0;
  int local_size = 1;
  std::string host;

  // Cores and threads.
  std::vector<int> bound_cpus;              // the rank's CPU affinity
  int node_cpus = 0;                        // CPUs online on the node
  std::vector<std::vector<int>> numa_cpus;  // the CPUs of each NUMA node; empty when unknown
  int intra_op_threads = 1;                 // LibTorch threads training will use

  // GPUs.
  bool wants_gpu = false;  // --device is auto or cuda
  int visible_gpus = 0;    // CUDA devices this rank sees
  std::string single_gpu;  // the PCI bus id of the one GPU it sees; "" when it sees none or several
  int node_gpus = 0;       // GPUs the node has for the job
  int gpu = -1;            // the device this rank computes on; -1: CPU
  int gpu_numa = -1;       // that GPU's NUMA node; -1: unknown
  std::string cuda_visible_devices = "unset";

  // NCCL's network settings and what exists to match them.
  std::string nccl_socket_ifname;       // "" when unset
  std::string nccl_ib_hca;              // "" when unset
  std::vector<std::string> interfaces;  // network interfaces (/sys/class/net)
  std::vector<std::string> ib_ports;    // "mlx5_0:1" per InfiniBand port (/sys/class/infiniband)

  // The launcher and what the job asked it for.
  Launcher launcher = Launcher::Unknown;
  int slurm_cpus_per_task = 0;      // $SLURM_CPUS_PER_TASK; 0 when unset
  std::string slurm_gpus_per_task;  // $SLURM_GPUS_PER_TASK; "" when unset
};

// One problem, on one host, shared by the listed ranks.
struct PlacementWarning {
  std::string host;
  std::vector<int> ranks;
  std::string problem;
  std::string fix;
  // "host h, ranks 0-3: <problem>. Fix: <fix>"
  std::string text() const;
};

// Every rule over every rank and node. A warning that several ranks of one
// host share word for word is reported once with all their ranks; the result
// is ordered by host (in rank order) and lowest rank.
std::vector<PlacementWarning> check_placement(const std::vector<RankTopology>& ranks);

// Linux's CPU list syntax ("0-3,8,10-11"), as in sysfs cpulist files.
// parse_cpu_list throws Error naming `what` on malformed text.
std::vector<int> parse_cpu_list(const std::string& text, const std::string& what = "CPU list");
std::string format_cpu_list(std::vector<int> cpus);

// A RankTopology as text and back, for gathering every rank's to rank 0.
std::string encode(const RankTopology& t);
RankTopology decode_rank_topology(const std::string& text);

}  // namespace cifar
