// Device and backend choice, a pure function: checked for machines we do not have.
#include <gtest/gtest.h>

#include "comm/backends.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

World node_of(int local_rank, int local_size) {
  World w;
  w.rank = local_rank;
  w.size = local_size;
  w.local_rank = local_rank;
  w.local_size = local_size;
  w.host = "gpu-node-7";
  return w;
}

Machine gpus(int n) {
  Machine m;
  m.visible_gpus = n;
  m.nccl_compiled = true;
  m.torch_has_cuda = true;
  if (n == 0) m.why_no_gpu = "no CUDA-capable device is detected";
  return m;
}

TEST(Placement, AutoPicksNcclOnLocalRankGpu) {
  const Placement p = choose_placement(node_of(3, 8), "auto", DeviceRequest::Auto, gpus(8));
  EXPECT_EQ(p.backend, "nccl");
  EXPECT_EQ(p.device, torch::Device(torch::kCUDA, 3));
}

TEST(Placement, AutoFallsBackToMpiOnCpu) {
  const Placement p = choose_placement(node_of(1, 2), "auto", DeviceRequest::Auto, gpus(0));
  EXPECT_EQ(p.backend, "mpi");
  EXPECT_TRUE(p.device.is_cpu());
}

TEST(Placement, NcclWithoutGpuSuggestsMpi) {
  try {
    choose_placement(node_of(0, 2), "nccl", DeviceRequest::Auto, gpus(0));
    FAIL();
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("gpu-node-7"), std::string::npos) << m;
    EXPECT_NE(m.find("--backend mpi"), std::string::npos) << m;
  }
}

TEST(Placement, MoreRanksThanGpusIsRefusedForNccl) {
  try {
    choose_placement(node_of(0, 4), "nccl", DeviceRequest::Auto, gpus(2));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("runs 4 ranks but has 2 visible GPU"), std::string::npos) << e.what();
  }
}

TEST(Placement, MpiMayShareGpus) {
  const Placement p = choose_placement(node_of(1, 2), "mpi", DeviceRequest::Cuda, gpus(1));
  EXPECT_EQ(p.backend, "mpi");
  EXPECT_EQ(p.device, torch::Device(torch::kCUDA, 0));
}

// Per-task GPU binding (srun --gpus-per-task=1, --gpu-bind=single:1): each
// rank sees one GPU; the node's ranks compare their PCI bus ids.
TEST(Placement, PerTaskGpuBindingKnownAnswers) {
  struct Row {
    const char* name;
    std::string backend;
    int visible;
    std::vector<std::string> node_single_gpus;  // by local rank
    int expected_gpu;                           // on local rank 3 of 4; -1: refused
  };
  const std::vector<std::string> own = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0"};
  const std::vector<Row> rows = {
      {"nccl, one GPU of its own each: cuda:0", "nccl", 1, own, 0},
      {"auto, one GPU of its own each: nccl on cuda:0", "auto", 1, own, 0},
      {"mpi, one GPU of its own each: cuda:0", "mpi", 1, own, 0},
      {"nccl, two ranks see the same GPU", "nccl", 1, {own[0], own[1], own[2], own[2]}, -1},
      {"nccl, a rank's GPU unknown", "nccl", 1, {own[0], own[1], own[2], ""}, -1},
      {"nccl, not gathered", "nccl", 1, {}, -1},
      {"nccl, every rank sees the node's 4 GPUs", "nccl", 4, {"", "", "", ""}, 3},
  };
  for (const Row& row : rows) {
    Machine m = gpus(row.visible);
    m.node_single_gpus = row.node_single_gpus;
    if (row.expected_gpu < 0) {
      EXPECT_THROW(choose_placement(node_of(3, 4), row.backend, DeviceRequest::Auto, m), ConfigError) << row.name;
      continue;
    }
    const Placement p = choose_placement(node_of(3, 4), row.backend, DeviceRequest::Auto, m);
    EXPECT_EQ(p.device, torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(row.expected_gpu))) << row.name;
    EXPECT_EQ(p.backend, row.backend == "mpi" ? "mpi" : "nccl") << row.name;
  }
}

// Where every rank of the node computes (Placement::node_gpus, by local
// rank): the placement's own rule applied to each of them.
TEST(Placement, NodeGpusFollowTheRule) {
  Machine eight = gpus(8);
  for (int i = 0; i < 8; ++i) eight.gpu_bus_ids.push_back(strprintf("00000000:%02X:00.0", 0x10 * (i + 1)));
  const auto bus = [&](int i) { return eight.gpu_bus_ids[static_cast<size_t>(i)]; };

  const Placement nccl = choose_placement(node_of(2, 8), "nccl", DeviceRequest::Auto, eight);
  ASSERT_EQ(nccl.node_gpus.size(), 8u);
  for (int l = 0; l < 8; ++l) EXPECT_EQ(nccl.node_gpus[static_cast<size_t>(l)], bus(l)) << "local rank " << l;

  // MPI, 16 ranks on 8 GPUs: local rank l on GPU l % 8.
  const Placement shared = choose_placement(node_of(9, 16), "mpi", DeviceRequest::Cuda, eight);
  ASSERT_EQ(shared.node_gpus.size(), 16u);
  for (int l = 0; l < 16; ++l) EXPECT_EQ(shared.node_gpus[static_cast<size_t>(l)], bus(l % 8)) << "local rank " << l;

  // Per-task binding: each rank's own GPU, as the node's ranks reported it.
  Machine own = gpus(1);
  own.gpu_bus_ids = {"00000000:5D:00.0"};
  own.node_single_gpus = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0"};
  EXPECT_EQ(choose_placement(node_of(3, 4), "nccl", DeviceRequest::Auto, own).node_gpus, own.node_single_gpus);

  // On the CPU: no GPU for any rank.
  EXPECT_EQ(choose_placement(node_of(1, 2), "auto", DeviceRequest::Cpu, eight).node_gpus, std::vector<std::string>(2));
}

TEST(Placement, NcclNotCompiled) {
  Machine m = gpus(8);
  m.nccl_compiled = false;
  EXPECT_THROW(choose_placement(node_of(0, 1), "nccl", DeviceRequest::Auto, m), ConfigError);
  EXPECT_EQ(choose_placement(node_of(0, 1), "auto", DeviceRequest::Auto, m).backend, "mpi");
}

TEST(Placement, CpuOnlyTorchRefusesCuda) {
  Machine m = gpus(1);
  m.torch_has_cuda = false;
  EXPECT_THROW(choose_placement(node_of(0, 1), "mpi", DeviceRequest::Cuda, m), ConfigError);
}

}  // namespace
}  // namespace cifar
