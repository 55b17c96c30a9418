// Communicator collectives with closed-form answers: rank r contributes
// (r + 1) * (i + 1) at element i, so the sum is W(W+1)/2 * (i + 1) exactly.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "comm/mpi_communicator.hpp"
#include "comm/nccl_communicator.hpp"
#include "gpu/cuda_runtime.hpp"
#include "support/mpi_test_env.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

MpiCommunicator& comm() {
  static MpiCommunicator c(test::env().comm());
  return c;
}

torch::Tensor rank_pattern(int64_t n, torch::ScalarType dtype, int rank) {
  // Values stay small enough to be exact in bfloat16 for the 16-bit cases.
  auto i = torch::arange(n, torch::kFloat64).remainder(8) + 1;
  return (i * (rank + 1)).to(dtype);
}

torch::Tensor expected_sum(int64_t n, torch::ScalarType dtype, int world) {
  auto i = torch::arange(n, torch::kFloat64).remainder(8) + 1;
  return (i * (world * (world + 1) / 2)).to(dtype);
}

struct Case {
  int64_t n;
  torch::ScalarType dtype;
};

class AllReduce : public ::testing::TestWithParam<Case> {};

TEST_P(AllReduce, SumIsExact) {
  const auto [n, dtype] = GetParam();
  const int W = comm().size();
  torch::Tensor t = rank_pattern(n, dtype, comm().rank());
  comm().all_reduce(t, ReduceOp::Sum);
  EXPECT_TRUE(torch::equal(t, expected_sum(n, dtype, W))) << "n=" << n << " dtype=" << dtype;
}

TEST_P(AllReduce, AverageIsExact) {
  const auto [n, dtype] = GetParam();
  const int W = comm().size();
  // Each rank sends W * pattern so the average is W(W+1)/2 * pattern, exact for ints too.
  torch::Tensor t = (rank_pattern(n, torch::kFloat64, comm().rank()) * W).to(dtype);
  comm().all_reduce(t, ReduceOp::Average);
  EXPECT_TRUE(torch::equal(t, expected_sum(n, dtype, W))) << "n=" << n << " dtype=" << dtype;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (auto dtype : {torch::kFloat32, torch::kFloat64, torch::kBFloat16, torch::kFloat16, torch::kInt64})
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{(1 << 20) + 3}}) out.push_back({n, dtype});
  out.push_back({16 * 1024 * 1024, torch::kFloat32});  // 64 MiB
  return out;
}

INSTANTIATE_TEST_SUITE_P(SizesAndDtypes, AllReduce, ::testing::ValuesIn(cases()), [](const auto& info) {
  return std::string(c10::toString(info.param.dtype)) + "_" + std::to_string(info.param.n);
});

TEST(Broadcast, FromNonZeroRoot) {
  const int root = comm().size() - 1;
  torch::Tensor t = torch::full({1000}, comm().rank() == root ? 42.0 : -1.0);
  comm().broadcast(t, root);
  EXPECT_TRUE(torch::all(t == 42.0).item<bool>());
}

TEST(AllGather, StacksEveryRank) {
  torch::Tensor mine = torch::full({3, 2}, static_cast<double>(comm().rank()), torch::kInt64);
  torch::Tensor all = comm().all_gather(mine);
  ASSERT_EQ(all.sizes(), (std::vector<int64_t>{comm().size(), 3, 2}));
  for (int r = 0; r < comm().size(); ++r) EXPECT_TRUE(torch::all(all[r] == r).item<bool>()) << "slot " << r;
}

TEST(AsyncAllReduce, SeveralWaitedInReverseOrder) {
  const int W = comm().size();
  std::vector<torch::Tensor> tensors;
  std::vector<std::unique_ptr<Work>> works;
  for (int k = 0; k < 6; ++k) {
    tensors.push_back(rank_pattern(1000 * (k + 1), torch::kFloat32, comm().rank()) * (k + 1));
    works.push_back(comm().all_reduce_async(tensors.back(), ReduceOp::Sum, "test " + std::to_string(k)));
  }
  for (int k = 5; k >= 0; --k) {
    works[k]->wait();
    EXPECT_TRUE(torch::equal(tensors[k], expected_sum(1000 * (k + 1), torch::kFloat32, W) * (k + 1))) << "k=" << k;
  }
}

TEST(Barrier, Completes) { comm().barrier(); }

TEST(Timeout, StalledCollectiveIsReported) {
  if (comm().size() < 2) GTEST_SKIP() << "needs two ranks: one stalls while the other waits";
  // Rank 0 starts an all-reduce the others join only after its timeout.
  MpiCommunicator c(test::env().comm(), std::chrono::milliseconds(300));
  torch::Tensor t = torch::ones({8});
  if (comm().rank() == 0) {
    auto work = c.all_reduce_async(t, ReduceOp::Sum, "step 7 bucket 2");
    try {
      work->wait();
      FAIL() << "expected CommTimeout";
    } catch (const CommTimeout& e) {
      EXPECT_NE(std::string(e.what()).find("step 7 bucket 2"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("all_reduce of 8 float"), std::string::npos) << e.what();
    }
    comm().barrier();
    // A timed-out wait may be retried: the collective completes once the others join.
    for (int attempt = 0;; ++attempt) {
      try {
        work->wait();
        break;
      } catch (const CommTimeout&) {
        ASSERT_LT(attempt, 200) << "the all-reduce never completed";
      }
    }
  } else {
    comm().barrier();
    c.all_reduce(t, ReduceOp::Sum);
  }
  EXPECT_EQ(t[0].item<float>(), comm().size());
}

TEST(NcclUniqueId, SameBytesOnEveryRank) {
  if (!gpu::compiled()) GTEST_SKIP() << "NCCL not compiled into this build";
  const NcclUniqueIdBytes id = broadcast_nccl_unique_id(test::env().comm());
  torch::Tensor mine = torch::from_blob(const_cast<char*>(id.data()), {kNcclUniqueIdBytes}, torch::kUInt8).clone();
  torch::Tensor all = comm().all_gather(mine);
  for (int r = 0; r < comm().size(); ++r) EXPECT_TRUE(torch::equal(all[r], mine)) << "rank " << r << " differs";
  EXPECT_TRUE(torch::any(mine != 0).item<bool>()) << "the id is all zeros";
}

TEST(NcclCommunicator, WithoutGpuFailsWithClearError) {
  std::string why;
  if (gpu::device_count(&why) > 0) GTEST_SKIP() << "a GPU is visible; this checks the no-GPU path";
  try {
    make_nccl_communicator(test::env().comm(), 0, std::chrono::seconds(5));
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--backend mpi"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cifar
