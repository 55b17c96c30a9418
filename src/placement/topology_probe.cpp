// The live side of the placement checks (see topology_probe.hpp).
#include "placement/topology_probe.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include "comm/text_collectives.hpp"
#include "gpu/cuda_runtime.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

// The names in a folder; none when it is missing (no such hardware or driver).
std::vector<std::string> list_or_none(const std::string& folder) {
  if (!paths::is_directory(folder)) return {};
  return paths::list(folder);
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The cpuset file of this process's cgroup (<proc>/self/cgroup lines are
// "hierarchy:controllers:path"): cgroup v1's cpuset hierarchy, else v2's
// single one; "" when neither names a file that exists.
std::string cgroup_cpuset_file(const ProbeRoots& roots) {
  std::ifstream in(paths::join(roots.proc, "self/cgroup"));
  std::string v1, v2;
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
    const std::string path = line.substr(second + 1);
    if (controllers.find(",cpuset,") != std::string::npos)
      v1 = paths::join(roots.sys, "fs/cgroup/cpuset" + path + "/cpuset.effective_cpus");
    else if (line.compare(0, first, "0") == 0 && controllers == ",,")
      v2 = paths::join(roots.sys, "fs/cgroup" + path + "/cpuset.cpus.effective");
  }
  for (const std::string& file : {v1, v2})
    if (!file.empty() && paths::is_regular_file(file)) return file;
  return "";
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

}  // namespace

int env_count(const char* name) {
  const int n = std::atoi(env_or(name, "0").c_str());
  return std::max(0, n);
}

std::vector<std::vector<int>> read_numa_cpus(const std::string& sys) {
  const std::string folder = paths::join(sys, "devices/system/node");
  std::vector<std::vector<int>> nodes;
  for (const auto& name : list_or_none(folder)) {
    if (name.rfind("node", 0) != 0 || name.size() == 4 || !std::isdigit(static_cast<unsigned char>(name[4]))) continue;
    const size_t index = static_cast<size_t>(std::atoi(name.c_str() + 4));
    if (nodes.size() <= index) nodes.resize(index + 1);
    const std::string file = paths::join(paths::join(folder, name), "cpulist");
    nodes[index] = parse_cpu_list(first_line(file), file);
  }
  return nodes;
}

std::vector<std::string> read_network_interfaces(const std::string& sys) {
  return list_or_none(paths::join(sys, "class/net"));
}

std::vector<std::string> read_ib_ports(const std::string& sys) {
  const std::string folder = paths::join(sys, "class/infiniband");
  std::vector<std::string> ports;
  for (const auto& device : list_or_none(folder))
    for (const auto& port : list_or_none(paths::join(paths::join(folder, device), "ports")))
      ports.push_back(device + ":" + port);
  return ports;
}

int read_pci_numa_node(const std::string& sys, const std::string& pci_bus_id) {
  std::string id = pci_bus_id;
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  // sysfs names the PCI domain with 4 hex digits; CUDA and nvidia-smi may use 8.
  const auto colon = id.find(':');
  if (colon == 8 && id.compare(0, 4, "0000") == 0) id.erase(0, 4);
  const std::string file = paths::join(sys, "bus/pci/devices/" + id + "/numa_node");
  if (id.empty() || !paths::is_regular_file(file)) return -1;
  const std::string text = first_line(file);
  return text.empty() ? -1 : std::atoi(text.c_str());
}

int count_driver_gpus(const std::string& proc) {
  return static_cast<int>(list_or_none(paths::join(proc, "driver/nvidia/gpus")).size());
}

std::vector<int> bound_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::vector<int> read_allowed_cpus(const ProbeRoots& roots) {
  const std::string cpuset = cgroup_cpuset_file(roots);
  if (!cpuset.empty()) {
    const std::vector<int> cpus = parse_cpu_list(first_line(cpuset), cpuset);
    if (!cpus.empty()) return cpus;  // an empty cpuset: the parent's applies
  }
  const std::string online = paths::join(roots.sys, "devices/system/cpu/online");
  return paths::is_regular_file(online) ? parse_cpu_list(first_line(online), online) : std::vector<int>{};
}

Launcher detect_launcher() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) return Launcher::Mpirun;
  if (std::getenv("SLURM_PROCID")) return Launcher::Srun;
  return Launcher::Unknown;
}

RankTopology probe_rank_topology(const World& world, DeviceRequest device, int gpu, int intra_op_threads,
                                 const ProbeRoots& roots) {
  RankTopology t;
  t.rank = world.rank;
  t.local_rank = world.local_rank;
  t.local_size = world.local_size;
  t.host = world.host;
  t.bound_cpus = bound_cpus();
  t.node_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  t.numa_cpus = read_numa_cpus(roots.sys);
  t.intra_op_threads = intra_op_threads;
  t.wants_gpu = device != DeviceRequest::Cpu;
  t.visible_gpus = gpu::device_count();
  if (t.visible_gpus == 1) t.single_gpu = gpu::pci_bus_id(0);
  // The job's GPUs on this node: Slurm says how many it allocated; elsewhere
  // the driver's count is what the node has.
  t.node_gpus = env_count("SLURM_GPUS_ON_NODE");
  if (t.node_gpus == 0) t.node_gpus = std::max(count_driver_gpus(roots.proc), t.visible_gpus);
  t.gpu = gpu;
  if (gpu >= 0) t.gpu_numa = read_pci_numa_node(roots.sys, gpu::pci_bus_id(gpu));
  t.cuda_visible_devices = env_or("CUDA_VISIBLE_DEVICES", "unset");
  t.nccl_socket_ifname = env_or("NCCL_SOCKET_IFNAME", "");
  t.nccl_ib_hca = env_or("NCCL_IB_HCA", "");
  t.interfaces = read_network_interfaces(roots.sys);
  t.ib_ports = read_ib_ports(roots.sys);
  t.launcher = detect_launcher();
  t.slurm_cpus_per_task = env_count("SLURM_CPUS_PER_TASK");
  t.slurm_gpus_per_task = env_or("SLURM_GPUS_PER_TASK", "");
  return t;
}

std::vector<RankTopology> gather_topologies(MPI_Comm comm, const RankTopology& topology, int root) {
  std::vector<RankTopology> topologies;
  for (const std::string& text : gather_strings(comm, encode(topology), root))
    topologies.push_back(decode_rank_topology(text));
  return topologies;
}

}  // namespace cifar
