// Fills a RankTopology (placement/placement_rules.hpp) from the live process: its
// CPU affinity, sysfs (NUMA nodes, network interfaces, InfiniBand ports, the
// GPU's NUMA node), the CUDA runtime (gpu/cuda_runtime.hpp, "no GPU" where
// CUDA was not compiled) and the environment the launcher set.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "config/choices.hpp"
#include "mpi/world.hpp"
#include "placement/placement_rules.hpp"

namespace cifar {

// The folders that stand for /sys and /proc: the real ones, or made-up trees in tests.
struct ProbeRoots {
  std::string sys = "/sys";
  std::string proc = "/proc";
};

// The CPUs of each NUMA node (<sys>/devices/system/node/node<N>/cpulist),
// indexed by N; empty when the kernel does not say.
std::vector<std::vector<int>> read_numa_cpus(const std::string& sys);
// Names in <sys>/class/net, sorted.
std::vector<std::string> read_network_interfaces(const std::string& sys);
// "device:port" for each <sys>/class/infiniband/<device>/ports/<port>, sorted.
std::vector<std::string> read_ib_ports(const std::string& sys);
// The NUMA node of a PCI device from CUDA's bus id ("00000000:3B:00.0" or
// "0000:3b:00.0"): <sys>/bus/pci/devices/0000:3b:00.0/numa_node; -1 unknown.
int read_pci_numa_node(const std::string& sys, const std::string& pci_bus_id);
// GPUs the NVIDIA driver has on this node (<proc>/driver/nvidia/gpus/*),
// whatever CUDA_VISIBLE_DEVICES hides; 0 without the driver.
int count_driver_gpus(const std::string& proc);

// The CPUs this process may run on (sched_getaffinity).
std::vector<int> bound_cpus();
// The CPUs this process's cgroup lets it use, whatever its affinity: the
// cpuset of its cgroup as <proc>/self/cgroup names it (v1's
// cpuset.effective_cpus, v2's cpuset.cpus.effective), else every CPU online
// (<sys>/devices/system/cpu/online); empty when neither says.
std::vector<int> read_allowed_cpus(const ProbeRoots& roots = {});
// mpirun sets OMPI_COMM_WORLD_SIZE for its ranks; srun sets SLURM_PROCID
// (checked second: mpirun's ranks inside an allocation inherit Slurm's variables).
Launcher detect_launcher();

// A positive count from the environment variable `name` (SLURM_NTASKS and
// the like); 0 when unset or not a number.
int env_count(const char* name);

// This rank's topology. `gpu` is the CUDA device it computes on (-1: CPU),
// `intra_op_threads` the LibTorch threads training will use.
RankTopology probe_rank_topology(const World& world, DeviceRequest device, int gpu, int intra_op_threads,
                                 const ProbeRoots& roots = {});

// Each rank's topology on `root` of `comm`, in rank order, through encode()
// and decode_rank_topology(); the other ranks get an empty vector.
// Collective.
std::vector<RankTopology> gather_topologies(MPI_Comm comm, const RankTopology& topology, int root = 0);

}  // namespace cifar
