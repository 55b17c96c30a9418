// The GPU path with known answers: NCCL collectives (one rank per GPU, so
// np 1 on a one-GPU machine), the MPI backend on CUDA tensors (staged through
// host memory; np 2 may share one GPU), the gradient reducer on CUDA, and the
// GPU-resident batch path against the CPU one, and Muon's Newton-Schulz
// iteration in bf16 (its GPU precision) against fp32.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "comm/gradient_reducer.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/nccl_communicator.hpp"
#include "data/batch_loader.hpp"
#include "data/batch_transform.hpp"
#include "gpu/cuda_runtime.hpp"
#include "gpu/torch_stream.hpp"
#include "model/model.hpp"
#include "optim/newton_schulz.hpp"
#include "require_gpu.hpp"
#include "support/mpi_test_env.hpp"

namespace cifar {
namespace {

int world() { return test::env().world().size; }
int rank() { return test::env().world().rank; }
torch::Device gpu_device() { return torch::Device(torch::kCUDA, 0); }

std::unique_ptr<Communicator>& nccl() {
  static std::unique_ptr<Communicator> c;
  if (!c) c = make_nccl_communicator(test::env().comm(), 0, std::chrono::seconds(60));
  return c;
}

TEST(NcclCommunicator, AllReduceEveryDtype) {
  REQUIRE_GPU();
  if (world() != 1) GTEST_SKIP() << "NCCL needs one GPU per rank; this machine runs " << world() << " ranks";
  for (auto dtype : {torch::kFloat32, torch::kFloat64, torch::kBFloat16, torch::kFloat16, torch::kInt64}) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{(1 << 20) + 3}}) {
      auto expected = (torch::arange(n, torch::kFloat64).remainder(8) + 1).to(dtype);
      auto t = expected.to(gpu_device());
      nccl()->all_reduce(t, ReduceOp::Sum);
      EXPECT_TRUE(torch::equal(t.cpu(), expected)) << dtype << " n=" << n;
      nccl()->all_reduce(t, ReduceOp::Average);
      EXPECT_TRUE(torch::equal(t.cpu(), expected)) << dtype << " n=" << n;
    }
  }
}

TEST(NcclCommunicator, AsyncIsOrderedAgainstCompute) {
  REQUIRE_GPU();
  if (world() != 1) GTEST_SKIP() << "NCCL needs one GPU per rank";
  // Long compute on the current stream, then an all-reduce of its result:
  // the NCCL stream must wait for it (events), and wait() must order the read.
  auto a = torch::rand({2048, 2048}, gpu_device());
  auto t = torch::matmul(a, a).sum(1);
  auto expected = t.cpu();
  auto work = nccl()->all_reduce_async(t, ReduceOp::Sum, "ordering test");
  work->wait();
  EXPECT_TRUE(torch::allclose(t.cpu(), expected));
  auto b = torch::zeros({3}, torch::TensorOptions().dtype(torch::kInt64).device(gpu_device()));
  nccl()->broadcast(b, 0);
  EXPECT_EQ(nccl()->all_gather(b).size(0), 1);
}

TEST(MpiCommunicator, CudaTensorsStagedThroughHost) {
  REQUIRE_GPU();
  MpiCommunicator c(test::env().comm());
  auto t = torch::full({1000}, static_cast<float>(rank() + 1), torch::TensorOptions().device(gpu_device()));
  c.all_reduce(t, ReduceOp::Sum);
  EXPECT_TRUE(t.is_cuda());
  EXPECT_EQ(t[999].item<float>(), world() * (world() + 1) / 2.0f);
}

TEST(GradientReducer, AveragesOnTheGpu) {
  REQUIRE_GPU();
  // MPI backend (any rank count on one GPU); NCCL is covered at np 1 below.
  MpiCommunicator c(test::env().comm());
  torch::manual_seed(5);
  auto model = make_model("convnet");
  model->to(gpu_device());
  GradientReducer reducer(model->parameters(), model->buffers(), c, BucketOptions{1 << 16, 1 << 16});
  torch::manual_seed(100 + rank());
  auto x = torch::randn({16, 3, 32, 32}, gpu_device());
  auto y = torch::randint(0, 10, {16}, torch::TensorOptions().dtype(torch::kLong).device(gpu_device()));
  reducer.prepare_for_backward(true, 0);
  torch::nn::functional::cross_entropy(model->forward(x), y).backward();
  reducer.finish();
  // Every rank holds the same averaged gradient: all-gather and compare.
  auto g = model->parameters().back().grad().detach().clone();
  auto all = c.all_gather(g.cpu());
  for (int r = 1; r < world(); ++r) EXPECT_TRUE(torch::equal(all[r], all[0])) << "rank " << r;
}

TEST(GradientReducer, NcclMatchesLocalGradientsAtOneRank) {
  REQUIRE_GPU();
  if (world() != 1) GTEST_SKIP() << "NCCL needs one GPU per rank";
  torch::manual_seed(6);
  auto model = make_model("convnet");
  model->to(gpu_device());
  auto x = torch::randn({32, 3, 32, 32}, gpu_device());
  auto y = torch::randint(0, 10, {32}, torch::TensorOptions().dtype(torch::kLong).device(gpu_device()));
  torch::nn::functional::cross_entropy(model->forward(x), y).backward();
  std::vector<torch::Tensor> local;
  for (auto& p : model->parameters()) {
    local.push_back(p.grad().clone());
    p.mutable_grad() = torch::Tensor();
  }
  GradientReducer reducer(model->parameters(), model->buffers(), *nccl(), BucketOptions{1 << 16, 1 << 16});
  reducer.prepare_for_backward(true, 0);
  torch::nn::functional::cross_entropy(model->forward(x), y).backward();
  reducer.finish();
  auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::allclose(params[i].grad(), local[i])) << i;
}

TEST(ResidentData, GpuBatchesEqualCpuBatches) {
  REQUIRE_GPU();
  torch::manual_seed(7);
  Split cpu;
  cpu.name = "train";
  cpu.images = torch::randint(0, 256, {300, 3, 32, 32}, torch::kLong).to(torch::kUInt8);
  cpu.labels = torch::randint(0, 10, {300}, torch::kLong);
  Split resident = cpu;
  resident.images = cpu.images.to(gpu_device());
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < 300; i += 2) indices.push_back(299 - i);
  LoaderOptions opts;
  opts.augment = true;
  opts.seed = 3;
  BatchLoader on_cpu(cpu, indices, 64, opts);
  opts.resident = true;
  BatchLoader on_gpu(resident, indices, 64, opts, gpu_device());
  while (auto a = on_cpu.next()) {
    auto b = on_gpu.next();
    ASSERT_TRUE(b.has_value());
    EXPECT_TRUE(b->images.is_cuda());
    EXPECT_TRUE(torch::equal(a->images, b->images.cpu()));  // normalize_batch divides exactly on both
    EXPECT_TRUE(torch::equal(a->labels, b->labels.cpu()));
  }
}

// Muon orthogonalises in bf16 on GPUs and in fp32 on CPUs, so no CPU test
// runs the bf16 arithmetic. Batches of speed94's filter shapes (64 x 3*3*64,
// and tall ones, iterated transposed): bf16 within 3% of fp32 in Frobenius
// norm (about 0.5-0.9% measured with CPU bf16, which also accumulates in
// fp32), and the GPU's fp32 equal to the CPU's to rounding.
TEST(MuonOnGpu, Bf16NewtonSchulzMatchesFp32) {
  REQUIRE_GPU();
  torch::manual_seed(5);
  for (const auto& shape : std::vector<std::vector<int64_t>>{{8, 64, 576}, {6, 576, 64}, {2, 256, 2304}}) {
    const torch::Tensor x = torch::randn(shape).to(gpu_device());
    const torch::Tensor fp32 = newton_schulz(x);
    const torch::Tensor bf16 = newton_schulz(x.to(torch::kBFloat16));
    ASSERT_EQ(bf16.scalar_type(), torch::kBFloat16);
    const torch::Tensor diff = bf16.to(torch::kFloat32) - fp32;
    EXPECT_LT((diff.norm() / fp32.norm()).item<double>(), 0.03) << shape[1] << "x" << shape[2];
    const torch::Tensor on_cpu = newton_schulz(x.cpu());
    EXPECT_LT(((fp32.cpu() - on_cpu).norm() / on_cpu.norm()).item<double>(), 1e-3) << shape[1] << "x" << shape[2];
  }
}

}  // namespace
}  // namespace cifar
