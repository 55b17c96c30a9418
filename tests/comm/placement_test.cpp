// Device and backend choice, a pure function: checked for machines we do not have.
#include <gtest/gtest.h>

#include "comm/backends.hpp"
#include "util/error.hpp"

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
