// Binding a GPU rank to its GPU's NUMA node (placement/numa_binding.hpp) on
// made-up nodes: a sysfs tree in a temporary folder, read by the same readers
// as the live node (read_numa_cpus, read_pci_numa_node, read_allowed_cpus),
// then decided for every rank of the node.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>

#include "placement/numa_binding.hpp"
#include "placement/placement_rules.hpp"
#include "test_files.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

using test::TempDir;

void put_file(const std::string& root, const std::string& relative, const std::string& text) {
  const std::string path = paths::join(root, relative);
  ASSERT_EQ(paths::create_directories(paths::parent(path)), "");
  std::ofstream(path) << text;
}

// The eight GPUs' PCI bus ids as CUDA writes them: 0-3 on the first socket, 4-7 on the second.
const std::vector<std::string> kEightGpus = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0",
                                             "00000000:5D:00.0", "00000000:9A:00.0", "00000000:AB:00.0",
                                             "00000000:BA:00.0", "00000000:DB:00.0"};

// A node's /sys and /proc: two sockets (NUMA node 0: CPUs 0-47 and GPUs 0-3;
// NUMA node 1: CPUs 48-95 and GPUs 4-7), or one socket with every CPU and GPU.
struct SysfsNode {
  TempDir dir;
  ProbeRoots roots{dir.file("sys"), dir.file("proc")};
  explicit SysfsNode(bool two_sockets = true) {
    put_file(roots.sys, "devices/system/cpu/online", "0-95\n");
    put_file(roots.sys, "devices/system/node/node0/cpulist", two_sockets ? "0-47\n" : "0-95\n");
    if (two_sockets) put_file(roots.sys, "devices/system/node/node1/cpulist", "48-95\n");
    for (size_t g = 0; g < kEightGpus.size(); ++g) {
      std::string sysfs_name = kEightGpus[g].substr(4);  // sysfs: a 4-digit domain, lower case
      for (char& c : sysfs_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      put_file(roots.sys, "bus/pci/devices/" + sysfs_name + "/numa_node", two_sockets && g >= 4 ? "1\n" : "0\n");
    }
    put_file(roots.sys, "bus/pci/devices/0000:e1:00.0/numa_node", "-1\n");  // a GPU whose socket the firmware hides
    put_file(roots.proc, "self/cgroup", "0::/\n");
  }
  // This process's cgroup (v2) lets it use `cpus` only.
  void limit_cgroup(const std::string& cpus) {
    put_file(roots.proc, "self/cgroup", "0::/slurm/uid_0/job_7/step_0\n");
    put_file(roots.sys, "fs/cgroup/slurm/uid_0/job_7/step_0/cpuset.cpus.effective", cpus + "\n");
  }
};

// Each rank of the node, as the live probe would see it: `gpus` by local
// rank (bus ids, "" on the CPU), `current` each rank's affinity ("" for every
// CPU it may use: the launcher did not bind).
std::vector<NumaBinding> decide_every_rank(const SysfsNode& node, const std::vector<std::string>& gpus,
                                           const std::vector<std::string>& current) {
  std::vector<NumaBinding> out;
  for (size_t local = 0; local < gpus.size(); ++local) {
    NumaTopology t;
    t.numa_cpus = read_numa_cpus(node.roots.sys);
    t.allowed_cpus = read_allowed_cpus(node.roots);
    t.current_cpus = current[local].empty() ? t.allowed_cpus : parse_cpu_list(current[local]);
    for (const auto& gpu : gpus) t.node_gpu_numa.push_back(gpu.empty() ? -1 : read_pci_numa_node(node.roots.sys, gpu));
    t.local_rank = static_cast<int>(local);
    t.gpu = gpus[local];
    out.push_back(decide_numa_binding(t));
  }
  return out;
}

// What a rank gets: its CPU list when bound, else the reason.
std::string binding_outcome(const NumaBinding& b) { return b.binds() ? format_cpu_list(b.cpus) : b.text; }

struct BindingRow {
  const char* name;
  bool two_sockets;
  std::string cgroup;                // "" : no cgroup limit
  std::vector<std::string> gpus;     // by local rank
  std::vector<std::string> current;  // by local rank; "" unbound
  std::vector<std::string> expected;
};

std::vector<std::string> unbound_ranks(size_t ranks) { return std::vector<std::string>(ranks, ""); }

std::vector<std::string> gpus_in_turn(size_t ranks) {
  std::vector<std::string> gpus;
  for (size_t r = 0; r < ranks; ++r) gpus.push_back(kEightGpus[r % kEightGpus.size()]);
  return gpus;
}

TEST(NumaBinding, KnownAnswers) {
  const std::vector<BindingRow> rows = {
      {"8 ranks, one GPU each, unbound: each its socket's quarter",
       true,
       "",
       gpus_in_turn(8),
       unbound_ranks(8),
       {"0-11", "12-23", "24-35", "36-47", "48-59", "60-71", "72-83", "84-95"}},
      {"8 ranks the launcher bound (even on the wrong socket): left as they are",
       true,
       "",
       gpus_in_turn(8),
       {"48-59", "60-71", "72-83", "84-95", "0-11", "12-23", "24-35", "36-47"},
       {"not bound: the launcher bound it to CPUs 48-59", "not bound: the launcher bound it to CPUs 60-71",
        "not bound: the launcher bound it to CPUs 72-83", "not bound: the launcher bound it to CPUs 84-95",
        "not bound: the launcher bound it to CPUs 0-11", "not bound: the launcher bound it to CPUs 12-23",
        "not bound: the launcher bound it to CPUs 24-35", "not bound: the launcher bound it to CPUs 36-47"}},
      {"2 ranks on GPU 0 and GPU 4: a whole socket each",
       true,
       "",
       {kEightGpus[0], kEightGpus[4]},
       unbound_ranks(2),
       {"0-47", "48-95"}},
      {"a cgroup allows part of each socket: its share of the intersection",
       true,
       "0-11,48-59",
       {kEightGpus[0], kEightGpus[1], kEightGpus[4]},
       unbound_ranks(3),
       {"0-5", "6-11", "48-59"}},
      {"a cgroup without CPUs of the GPU's socket",
       true,
       "0-11",
       {kEightGpus[4]},
       unbound_ranks(1),
       {"not bound: none of NUMA node 1's CPUs (48-95) is allowed to it (allowed: 0-11)"}},
      {"the GPU's NUMA node unknown",
       true,
       "",
       {"00000000:E1:00.0"},
       unbound_ranks(1),
       {"not bound: the NUMA node of GPU 00000000:E1:00.0 is unknown"}},
      {"16 ranks on 8 GPUs (MPI, local rank mod 8): 8 ranks share each socket",
       true,
       "",
       gpus_in_turn(16),
       unbound_ranks(16),
       {"0-5", "6-11", "12-17", "18-23", "48-53", "54-59", "60-65", "66-71", "24-29", "30-35", "36-41", "42-47",
        "72-77", "78-83", "84-89", "90-95"}},
      {"a single-socket node: nothing is far", false, "", gpus_in_turn(4), unbound_ranks(4),
       std::vector<std::string>(4, "not bound: the node has one NUMA node")},
      {"ranks on the CPU",
       true,
       "",
       {"", ""},
       unbound_ranks(2),
       std::vector<std::string>(2, "not bound: computes on the CPU")},
  };
  for (const BindingRow& row : rows) {
    SysfsNode node(row.two_sockets);
    if (!row.cgroup.empty()) node.limit_cgroup(row.cgroup);
    const std::vector<NumaBinding> got = decide_every_rank(node, row.gpus, row.current);
    ASSERT_EQ(got.size(), row.expected.size()) << row.name;
    for (size_t r = 0; r < got.size(); ++r)
      EXPECT_EQ(binding_outcome(got[r]), row.expected[r]) << row.name << ", local rank " << r;
  }
}

TEST(NumaBinding, SaysWhereAndWhy) {
  SysfsNode node;
  const NumaBinding b = decide_every_rank(node, {kEightGpus[5]}, {""}).front();
  EXPECT_EQ(b.text, "bound to CPUs 48-95 (NUMA node 1 of GPU 00000000:AB:00.0)");
}

// Shares that do not divide evenly: the first ranks take one CPU more.
TEST(NumaBinding, UnevenShares) {
  SysfsNode node;
  node.limit_cgroup("0-9");
  const auto got =
      decide_every_rank(node, {kEightGpus[0], kEightGpus[1], kEightGpus[2], kEightGpus[3]}, unbound_ranks(4));
  std::vector<std::string> lists;
  for (const auto& b : got) lists.push_back(binding_outcome(b));
  EXPECT_EQ(lists, (std::vector<std::string>{"0-2", "3-5", "6-7", "8-9"}));
}

// The CPUs a process may use: its cgroup's cpuset (v2, v1), else every CPU online.
TEST(NumaBinding, AllowedCpusFromTheCgroup) {
  SysfsNode node;
  EXPECT_EQ(format_cpu_list(read_allowed_cpus(node.roots)), "0-95");  // cgroup "/" without a cpuset file
  node.limit_cgroup("4-7,52-55");
  EXPECT_EQ(format_cpu_list(read_allowed_cpus(node.roots)), "4-7,52-55");
  put_file(node.roots.proc, "self/cgroup", "12:cpuset:/slurm/job_9\n11:memory:/slurm/job_9\n0::/\n");
  put_file(node.roots.sys, "fs/cgroup/cpuset/slurm/job_9/cpuset.effective_cpus", "8-15\n");
  EXPECT_EQ(format_cpu_list(read_allowed_cpus(node.roots)), "8-15");
}

}  // namespace
}  // namespace cifar
