// The placement rules of --check-env on made-up machines: each rule fires on
// its mis-placement, says the fix, and stays quiet on a well-placed node.
#include <gtest/gtest.h>

#include "placement/placement_rules.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<int> range(int first, int last) {
  std::vector<int> v;
  for (int i = first; i <= last; ++i) v.push_back(i);
  return v;
}

// Rank r of `ranks` on one host with `cpus` CPUs, bound to all of them.
RankTopology rank_on(const char* host, int r, int ranks, int cpus) {
  RankTopology t;
  t.rank = r;
  t.local_rank = r;
  t.local_size = ranks;
  t.host = host;
  t.node_cpus = cpus;
  t.bound_cpus = range(0, cpus - 1);
  return t;
}

// A well-placed 8-GPU node: two NUMA nodes of 16 CPUs (0-15, 16-31), GPUs 0-3
// on NUMA node 0 and 4-7 on 1; srun gave each rank 4 cores in GPU order.
std::vector<RankTopology> gpu_node(int ranks = 8) {
  std::vector<RankTopology> node;
  for (int r = 0; r < ranks; ++r) {
    RankTopology t = rank_on("gpu-node-7", r, ranks, 32);
    t.bound_cpus = range(4 * r, 4 * r + 3);
    t.numa_cpus = {range(0, 15), range(16, 31)};
    t.intra_op_threads = 4;
    t.wants_gpu = true;
    t.visible_gpus = t.node_gpus = 8;
    t.gpu = r;
    t.gpu_numa = r < 4 ? 0 : 1;
    t.interfaces = {"eth0", "ib0", "lo"};
    t.ib_ports = {"mlx5_0:1", "mlx5_1:1"};
    t.launcher = Launcher::Srun;
    t.slurm_cpus_per_task = 4;
    node.push_back(t);
  }
  return node;
}

// A CPU-only machine with one NUMA node of `cpus` CPUs; ranks not bound.
std::vector<RankTopology> cpu_node(int ranks, int cpus) {
  std::vector<RankTopology> node;
  for (int r = 0; r < ranks; ++r) {
    RankTopology t = rank_on("cpu-box", r, ranks, cpus);
    t.numa_cpus = {range(0, cpus - 1)};
    t.intra_op_threads = std::max(1, cpus / ranks);
    t.interfaces = {"eth0", "lo"};
    t.launcher = Launcher::Mpirun;
    node.push_back(t);
  }
  return node;
}

std::string all_text(const std::vector<PlacementWarning>& warnings) {
  std::string s;
  for (const auto& w : warnings) s += w.text() + "\n";
  return s;
}

TEST(PlacementChecks, WellPlacedNodesHaveNoWarnings) {
  EXPECT_EQ(all_text(check_placement(gpu_node())), "");
  EXPECT_EQ(all_text(check_placement(cpu_node(2, 2))), "");
  EXPECT_EQ(all_text(check_placement(cpu_node(1, 64))), "");
}

TEST(PlacementChecks, GpusHiddenByGpusPerTask) {
  auto node = gpu_node();
  for (auto& t : node) {
    t.visible_gpus = 1;
    t.gpu = -1;  // NCCL refused the placement
    t.cuda_visible_devices = std::to_string(t.rank);
    t.slurm_gpus_per_task = "1";
  }
  const auto warnings = check_placement(node);
  ASSERT_EQ(warnings.size(), 1u) << all_text(warnings);
  EXPECT_EQ(warnings[0].ranks, range(0, 7));
  EXPECT_TRUE(contains(warnings[0].problem, "sees 1 of the node's 8 GPUs")) << warnings[0].problem;
  EXPECT_TRUE(contains(warnings[0].problem, "srun --gpus-per-task=1")) << warnings[0].problem;
  EXPECT_TRUE(contains(warnings[0].fix, "srun --gpus-per-node=8 --ntasks-per-node=8")) << warnings[0].fix;
  EXPECT_TRUE(contains(warnings[0].fix, "instead of --gpus-per-task")) << warnings[0].fix;
}

// srun --gpus-per-task=1: one GPU of its own per rank is used (each its
// cuda:0), not warned about; two ranks given the same GPU still are.
TEST(PlacementChecks, OneGpuOfItsOwnPerTaskIsNoProblem) {
  auto node = gpu_node();
  for (auto& t : node) {
    t.visible_gpus = 1;
    t.gpu = 0;
    t.single_gpu = strprintf("00000000:%02X:00.0", 0x18 + t.rank);
    t.cuda_visible_devices = std::to_string(t.rank);
    t.slurm_gpus_per_task = "1";
    t.gpu_numa = -1;
  }
  EXPECT_EQ(all_text(check_placement(node)), "");
  node[5].single_gpu = node[4].single_gpu;
  const auto warnings = check_placement(node);
  ASSERT_EQ(warnings.size(), 1u) << all_text(warnings);
  EXPECT_TRUE(contains(warnings[0].problem, "sees 1 of the node's 8 GPUs")) << warnings[0].problem;
}

TEST(PlacementChecks, HiddenGpusOutsideSlurmSuggestUnsettingCudaVisibleDevices) {
  auto node = gpu_node(2);
  for (auto& t : node) {
    t.launcher = Launcher::Mpirun;
    t.visible_gpus = 1;
    t.cuda_visible_devices = "0";
  }
  const auto warnings = check_placement(node);
  ASSERT_EQ(warnings.size(), 1u) << all_text(warnings);
  EXPECT_TRUE(contains(warnings[0].fix, "leave CUDA_VISIBLE_DEVICES unset")) << warnings[0].fix;
}

TEST(PlacementChecks, HiddenGpusDoNotMatterOnCpus) {
  auto node = gpu_node();
  for (auto& t : node) {
    t.wants_gpu = false;
    t.visible_gpus = 0;
    t.gpu = -1;
  }
  EXPECT_EQ(all_text(check_placement(node)), "");
}

TEST(PlacementChecks, CoresOnAnotherNumaNodeThanTheGpu) {
  auto node = gpu_node();
  std::swap(node[0].bound_cpus, node[4].bound_cpus);  // rank 0 on 16-19, rank 4 on 0-3
  const auto warnings = check_placement(node);
  ASSERT_EQ(warnings.size(), 2u) << all_text(warnings);
  EXPECT_EQ(warnings[0].ranks, std::vector<int>{0});
  EXPECT_TRUE(contains(warnings[0].problem, "cuda:0, attached to NUMA node 0 (CPUs 0-15)")) << warnings[0].problem;
  EXPECT_TRUE(contains(warnings[0].problem, "cores 16-19 on NUMA node(s) 1")) << warnings[0].problem;
  EXPECT_TRUE(contains(warnings[0].fix, "--distribution=block:block --cpus-per-task=4")) << warnings[0].fix;
  EXPECT_TRUE(contains(warnings[0].fix, "mpirun --map-by ppr:4:numa:PE=4 --bind-to core")) << warnings[0].fix;
  EXPECT_EQ(warnings[1].ranks, std::vector<int>{4});
}

TEST(PlacementChecks, NumaIsNotJudgedWhenTheGpusNodeIsUnknown) {
  auto node = gpu_node();
  std::swap(node[0].bound_cpus, node[4].bound_cpus);
  for (auto& t : node) t.gpu_numa = -1;
  EXPECT_EQ(all_text(check_placement(node)), "");
}

TEST(PlacementChecks, MoreThreadsThanBoundCores) {
  // mpirun at np 2 binds each rank to one core; --threads 4 oversubscribes it.
  auto node = cpu_node(2, 8);
  for (auto& t : node) {
    t.bound_cpus = {t.rank};
    t.intra_op_threads = 4;
  }
  const auto warnings = check_placement(node);
  ASSERT_EQ(warnings.size(), 2u) << all_text(warnings);
  EXPECT_EQ(warnings[0].problem, "runs 4 intra-op threads on 1 core(s) 0");
  EXPECT_TRUE(contains(warnings[0].fix, "use at most 1 thread(s) per rank")) << warnings[0].fix;
  EXPECT_TRUE(contains(warnings[0].fix, "mpirun --map-by slot:PE=4 --bind-to core")) << warnings[0].fix;
  EXPECT_EQ(warnings[1].problem, "runs 4 intra-op threads on 1 core(s) 1");
}

TEST(PlacementChecks, SeveralRanksBoundToTheSameCores) {
  // Open MPI above 2 ranks binds each rank to a whole socket.
  std::vector<RankTopology> node = cpu_node(4, 16);
  for (auto& t : node) {
    t.numa_cpus = {range(0, 7), range(8, 15)};
    t.bound_cpus = t.rank % 2 == 0 ? range(0, 7) : range(8, 15);
  }
  const auto warnings = check_placement(node);
  ASSERT_EQ(warnings.size(), 2u) << all_text(warnings);
  EXPECT_EQ(warnings[0].ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(warnings[0].problem, "are bound to overlapping cores (rank 0: 0-7; rank 2: 0-7) and compete for them");
  EXPECT_TRUE(contains(warnings[0].fix, "mpirun --map-by slot:PE=4 --bind-to core")) << warnings[0].fix;
  EXPECT_EQ(warnings[1].ranks, (std::vector<int>{1, 3}));
}

TEST(PlacementChecks, PartlyOverlappingBindingsAreOneGroup) {
  std::vector<RankTopology> node = cpu_node(3, 16);
  node[0].bound_cpus = range(0, 3);
  node[1].bound_cpus = range(3, 6);  // overlaps rank 0 at 3
  node[2].bound_cpus = range(6, 9);  // overlaps rank 1 at 6
  for (auto& t : node) t.intra_op_threads = 4;
  const auto warnings = check_placement(node);
  ASSERT_EQ(warnings.size(), 1u) << all_text(warnings);
  EXPECT_EQ(warnings[0].ranks, range(0, 2));
}

TEST(PlacementChecks, UnboundRanksOnTwoNumaNodes) {
  auto node = gpu_node(2);
  for (auto& t : node) {
    t.bound_cpus = range(0, 31);
    t.launcher = Launcher::Mpirun;
  }
  const auto warnings = check_placement(node);
  ASSERT_EQ(warnings.size(), 1u) << all_text(warnings);
  EXPECT_EQ(warnings[0].ranks, range(0, 1));
  EXPECT_EQ(warnings[0].problem,
            "is not bound to cores: it may run on all 32 CPUs of the node's 2 NUMA nodes, so the kernel moves its "
            "threads away from its memory and its GPU");
  EXPECT_TRUE(contains(warnings[0].fix, "bind each rank to 16 cores of one NUMA node: mpirun --map-by slot:PE=16"))
      << warnings[0].fix;
}

TEST(PlacementChecks, UnboundRanksOnOneNumaNodeAreFine) { EXPECT_EQ(all_text(check_placement(cpu_node(4, 16))), ""); }

TEST(PlacementChecks, MoreRanksThanCoresOnANode) {
  // 4 unbound ranks on a 2-core box (mpirun --oversubscribe): one warning for all four.
  const auto warnings = check_placement(cpu_node(4, 2));
  ASSERT_EQ(warnings.size(), 1u) << all_text(warnings);
  EXPECT_EQ(warnings[0].text(),
            "host cpu-box, ranks 0-3: 4 ranks run on a node with 2 CPU core(s), so they take turns on them. Fix: run "
            "at most 2 rank(s) per node (mpirun --map-by ppr:2:node), or spread the ranks over more nodes");
  // As many ranks as cores is fine; srun's words under srun.
  EXPECT_EQ(all_text(check_placement(cpu_node(2, 2))), "");
  auto srun = cpu_node(3, 2);
  for (auto& t : srun) t.launcher = Launcher::Srun;
  const auto under_srun = check_placement(srun);
  ASSERT_EQ(under_srun.size(), 1u) << all_text(under_srun);
  EXPECT_TRUE(contains(under_srun[0].fix, "run at most 2 rank(s) per node (srun --ntasks-per-node=2)"))
      << under_srun[0].fix;
}

TEST(PlacementChecks, SrunWithoutCpusPerTaskSqueezesRanksOntoOneCore) {
  auto node = gpu_node(2);
  for (auto& t : node) {
    t.bound_cpus = {t.rank};
    t.slurm_cpus_per_task = 8;
    t.intra_op_threads = 1;
  }
  const auto warnings = check_placement(node);
  ASSERT_EQ(warnings.size(), 2u) << all_text(warnings);
  EXPECT_EQ(warnings[0].problem, "srun bound it to 1 core(s) (0) though the job has --cpus-per-task=8");
  EXPECT_TRUE(contains(warnings[0].fix, "export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK")) << warnings[0].fix;
}

// NCCL's settings on a host with interfaces eth0, ib0, lo and InfiniBand
// ports mlx5_0:1, mlx5_1:1 (none with `no_ib`): the warnings' text, "" if none.
std::string nccl_warning(const std::string& ifname, const std::string& hca, bool no_ib = false) {
  auto node = gpu_node(1);
  node[0].nccl_socket_ifname = ifname;
  node[0].nccl_ib_hca = hca;
  if (no_ib) node[0].ib_ports.clear();
  return all_text(check_placement(node));
}

struct NcclCase {
  const char* ifname;
  const char* hca;
  std::vector<std::string> expected;  // parts of the warning; none: no warning
};

TEST(PlacementChecks, NcclSettingsMustNameWhatExists) {
  const std::vector<NcclCase> cases = {
      {"ib9",
       "",
       {"NCCL_SOCKET_IFNAME=ib9: no network interface here matches ib9 (interfaces: eth0, ib0, lo); "
        "NCCL's bootstrap will find no interface and fail. Fix: name interfaces that exist",
        "e.g. NCCL_SOCKET_IFNAME=eth0"}},
      {"=eth", "", {"no network interface here matches eth ("}},            // =: exact names
      {"eth0,ib9", "", {"matches ib9 (interfaces: eth0, ib0, lo). Fix:"}},  // one usable: no bootstrap failure
      {"^eth,ib,lo", "", {"excludes every network interface of this host"}},
      {"eth", "", {}},
      {"ib0", "", {}},
      {"=eth0", "", {}},
      {"^docker,lo", "", {}},
      {"^=eth0", "", {}},
      {"",
       "mlx5_4",
       {"NCCL_IB_HCA=mlx5_4: no InfiniBand adapter port here matches mlx5_4 "
        "(adapter:port here: mlx5_0:1, mlx5_1:1)",
        "e.g. NCCL_IB_HCA=mlx5_0:1"}},
      {"", "=mlx5_0:2", {"matches mlx5_0:2 ("}},  // no port 2
      {"", "=mlx5", {"matches mlx5 ("}},
      {"", "mlx5", {}},
      {"", "mlx5_0", {}},
      {"", "=mlx5_0:1,mlx5_1:1", {}},
      {"", "^mlx5_1", {}},
      {"", "^=mlx5_0,mlx5_1", {}},
  };
  for (const auto& c : cases) {
    const std::string w = nccl_warning(c.ifname, c.hca);
    SCOPED_TRACE(std::string("NCCL_SOCKET_IFNAME=") + c.ifname + " NCCL_IB_HCA=" + c.hca + ": " + w);
    if (c.expected.empty()) {
      EXPECT_EQ(w, "");
    }
    for (const auto& part : c.expected) EXPECT_TRUE(contains(w, part)) << part;
  }
}

TEST(PlacementChecks, NcclIbHcaWithoutInfiniband) {
  const std::string w = nccl_warning("", "mlx5_0", /*no_ib=*/true);
  EXPECT_TRUE(contains(w,
                       "NCCL_IB_HCA=mlx5_0 names InfiniBand adapters, but this host has none "
                       "(/sys/class/infiniband is empty"))
      << w;
  EXPECT_TRUE(contains(w, "unset NCCL_IB_HCA on hosts without InfiniBand")) << w;
}

TEST(PlacementChecks, WarningsAreMergedPerHostAndOrdered) {
  auto first = gpu_node(2);
  auto second = gpu_node(2);
  for (auto& t : second) {
    t.rank += 2;
    t.host = "gpu-node-8";
  }
  std::vector<RankTopology> all = second;  // any order in, rank order out
  all.insert(all.end(), first.begin(), first.end());
  for (auto& t : all) t.nccl_socket_ifname = "ib9";
  const auto warnings = check_placement(all);
  ASSERT_EQ(warnings.size(), 2u) << all_text(warnings);
  EXPECT_EQ(warnings[0].host, "gpu-node-7");
  EXPECT_EQ(warnings[0].ranks, range(0, 1));
  EXPECT_EQ(warnings[1].host, "gpu-node-8");
  EXPECT_EQ(warnings[1].ranks, range(2, 3));
  EXPECT_EQ(warnings[0].text().rfind("host gpu-node-7, ranks 0-1: NCCL_SOCKET_IFNAME=ib9: ", 0), 0u)
      << warnings[0].text();
  EXPECT_TRUE(contains(warnings[0].text(), ". Fix: name interfaces that exist")) << warnings[0].text();
}

TEST(CpuList, ParsesAndFormatsLinuxSyntax) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  EXPECT_EQ(format_cpu_list({11, 0, 1, 2, 3, 8, 10, 2}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_THROW(parse_cpu_list("3-1"), Error);
  EXPECT_THROW(parse_cpu_list("0-3x"), Error);
  try {
    parse_cpu_list("zero", "/sys/devices/system/node/node0/cpulist");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "/sys/devices/system/node/node0/cpulist: 'zero' is not a CPU list")) << e.what();
  }
}

TEST(RankTopologyText, RoundTrips) {
  RankTopology t = gpu_node(8)[5];
  t.nccl_socket_ifname = "^docker,lo";
  t.nccl_ib_hca = "=mlx5_0:1";
  t.cuda_visible_devices = "0,1,2,3,4,5,6,7";
  t.slurm_gpus_per_task = "1";
  const RankTopology back = decode_rank_topology(encode(t));
  EXPECT_EQ(encode(back), encode(t));
  EXPECT_EQ(back.bound_cpus, range(20, 23));
  EXPECT_EQ(back.numa_cpus, t.numa_cpus);
  EXPECT_EQ(back.interfaces, t.interfaces);
  EXPECT_EQ(back.ib_ports, t.ib_ports);
  EXPECT_EQ(back.launcher, Launcher::Srun);
  EXPECT_EQ(back.gpu_numa, 1);
  EXPECT_TRUE(back.wants_gpu);
  t.numa_cpus = {range(0, 3), {}};  // a NUMA node with memory only
  t.interfaces = {};
  EXPECT_EQ(decode_rank_topology(encode(t)).numa_cpus, t.numa_cpus);
  EXPECT_TRUE(decode_rank_topology(encode(t)).interfaces.empty());
  EXPECT_THROW(decode_rank_topology("rank=1\n"), Error);
}

}  // namespace
}  // namespace cifar
