// The live side of --check-env's placement checks, on made-up /sys and /proc
// trees: NUMA nodes, interfaces, InfiniBand ports, a GPU's NUMA node, the
// driver's GPU count, and the environment a launcher sets.
#include <gtest/gtest.h>

#include <fstream>

#include "placement/topology_probe.hpp"
#include "support/scoped_env.hpp"
#include "test_files.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

using test::ScopedEnv;
using test::TempDir;

// Writes `text` to root/relative, creating its folders.
void write(const std::string& root, const std::string& relative, const std::string& text) {
  const std::string path = paths::join(root, relative);
  ASSERT_EQ(paths::create_directories(paths::parent(path)), "");
  std::ofstream(path) << text;
}

void make_dir(const std::string& root, const std::string& relative) {
  ASSERT_EQ(paths::create_directories(paths::join(root, relative)), "");
}

// A two-socket GPU node as sysfs and procfs show it.
struct FakeNode {
  TempDir dir;
  std::string sys = dir.file("sys");
  std::string proc = dir.file("proc");
  FakeNode() {
    write(sys, "devices/system/node/node0/cpulist", "0-15,32-47\n");
    write(sys, "devices/system/node/node1/cpulist", "16-31,48-63\n");
    write(sys, "devices/system/node/online", "0-1\n");  // not a node folder
    for (const char* i : {"lo", "eth0", "ib0"}) make_dir(sys, std::string("class/net/") + i);
    make_dir(sys, "class/infiniband/mlx5_0/ports/1");
    make_dir(sys, "class/infiniband/mlx5_1/ports/1");
    make_dir(sys, "class/infiniband/mlx5_1/ports/2");
    write(sys, "bus/pci/devices/0000:3b:00.0/numa_node", "1\n");
    write(sys, "bus/pci/devices/0000:18:00.0/numa_node", "-1\n");
    make_dir(proc, "driver/nvidia/gpus/0000:18:00.0");
    make_dir(proc, "driver/nvidia/gpus/0000:3b:00.0");
  }
};

TEST(PlacementProbe, ReadsNumaNodesInterfacesAndInfinibandPorts) {
  FakeNode node;
  const auto numa = read_numa_cpus(node.sys);
  ASSERT_EQ(numa.size(), 2u);
  EXPECT_EQ(format_cpu_list(numa[0]), "0-15,32-47");
  EXPECT_EQ(format_cpu_list(numa[1]), "16-31,48-63");
  EXPECT_EQ(read_network_interfaces(node.sys), (std::vector<std::string>{"eth0", "ib0", "lo"}));
  EXPECT_EQ(read_ib_ports(node.sys), (std::vector<std::string>{"mlx5_0:1", "mlx5_1:1", "mlx5_1:2"}));
}

TEST(PlacementProbe, MissingSysfsFoldersMeanNothingIsKnown) {
  TempDir empty;
  EXPECT_TRUE(read_numa_cpus(empty.file("sys")).empty());
  EXPECT_TRUE(read_network_interfaces(empty.file("sys")).empty());
  EXPECT_TRUE(read_ib_ports(empty.file("sys")).empty());
  EXPECT_EQ(count_driver_gpus(empty.file("proc")), 0);
  EXPECT_EQ(read_pci_numa_node(empty.file("sys"), "0000:3b:00.0"), -1);
}

TEST(PlacementProbe, GpuNumaNodeFromCudasBusId) {
  FakeNode node;
  EXPECT_EQ(read_pci_numa_node(node.sys, "00000000:3B:00.0"), 1);  // nvidia-smi's 8-digit domain, upper case
  EXPECT_EQ(read_pci_numa_node(node.sys, "0000:3B:00.0"), 1);      // cudaDeviceGetPCIBusId's
  EXPECT_EQ(read_pci_numa_node(node.sys, "0000:18:00.0"), -1);     // a single-node kernel says -1
  EXPECT_EQ(read_pci_numa_node(node.sys, "0000:af:00.0"), -1);
  EXPECT_EQ(read_pci_numa_node(node.sys, ""), -1);
  EXPECT_EQ(count_driver_gpus(node.proc), 2);
}

TEST(PlacementProbe, LauncherFromTheEnvironment) {
  {
    ScopedEnv env({{"OMPI_COMM_WORLD_SIZE", "2"}, {"SLURM_PROCID", "0"}});  // mpirun inside an allocation
    EXPECT_EQ(detect_launcher(), Launcher::Mpirun);
  }
  {
    ScopedEnv env({{"OMPI_COMM_WORLD_SIZE", std::nullopt}, {"SLURM_PROCID", "3"}});
    EXPECT_EQ(detect_launcher(), Launcher::Srun);
  }
  ScopedEnv env({{"OMPI_COMM_WORLD_SIZE", std::nullopt}, {"SLURM_PROCID", std::nullopt}});
  EXPECT_EQ(detect_launcher(), Launcher::Unknown);
}

TEST(PlacementProbe, RankTopologyFromTreesAndEnvironment) {
  FakeNode node;
  ScopedEnv env({{"OMP_NUM_THREADS", "6"},  // read by nothing here: the options set the thread counts
                 {"SLURM_GPUS_ON_NODE", "4"},
                 {"CUDA_VISIBLE_DEVICES", std::nullopt},
                 {"NCCL_SOCKET_IFNAME", "ib9"},
                 {"NCCL_IB_HCA", "=mlx5_0:1"},
                 {"OMPI_COMM_WORLD_SIZE", std::nullopt},
                 {"SLURM_PROCID", "1"},
                 {"SLURM_CPUS_PER_TASK", "8"},
                 {"SLURM_GPUS_PER_TASK", "1"}});
  World w;
  w.rank = 1;
  w.size = 4;
  w.local_rank = 1;
  w.local_size = 2;
  w.host = "gpu-node-7";
  const RankTopology t = probe_rank_topology(w, DeviceRequest::Auto, -1, 3, ProbeRoots{node.sys, node.proc});
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.local_size, 2);
  EXPECT_EQ(t.host, "gpu-node-7");
  EXPECT_EQ(t.bound_cpus, bound_cpus());
  EXPECT_FALSE(t.bound_cpus.empty());
  EXPECT_EQ(t.numa_cpus.size(), 2u);
  EXPECT_EQ(t.intra_op_threads, 3);
  EXPECT_TRUE(t.wants_gpu);
  EXPECT_EQ(t.node_gpus, 4) << "Slurm's count of the job's GPUs wins over the driver's";
  EXPECT_EQ(t.gpu, -1);
  EXPECT_EQ(t.gpu_numa, -1);
  EXPECT_EQ(t.cuda_visible_devices, "unset");
  EXPECT_EQ(t.nccl_socket_ifname, "ib9");
  EXPECT_EQ(t.nccl_ib_hca, "=mlx5_0:1");
  EXPECT_EQ(t.interfaces, (std::vector<std::string>{"eth0", "ib0", "lo"}));
  EXPECT_EQ(t.ib_ports.size(), 3u);
  EXPECT_EQ(t.launcher, Launcher::Srun);
  EXPECT_EQ(t.slurm_cpus_per_task, 8);
  EXPECT_EQ(t.slurm_gpus_per_task, "1");
}

TEST(PlacementProbe, DriverCountWithoutSlurm) {
  FakeNode node;
  ScopedEnv env({{"SLURM_GPUS_ON_NODE", std::nullopt}});
  const RankTopology t = probe_rank_topology(World{}, DeviceRequest::Cpu, -1, 1, ProbeRoots{node.sys, node.proc});
  EXPECT_EQ(t.node_gpus, 2);
  EXPECT_FALSE(t.wants_gpu);
}

}  // namespace
}  // namespace cifar
