// A failure of one rank ends the job while the rank's communicators still
// live (mpi/mpi_main.hpp's end_job_on_failure, what the Trainer runs in):
// proven with a communicator whose teardown blocks, as ncclCommDestroy does
// while the other ranks wait in a collective of their own. Were the
// communicator torn down first, the process would block there and end with
// the double's own exit code instead of the failure's.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "comm/communicator.hpp"
#include "mpi/mpi_main.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

constexpr int kTornDown = 99;  // the double's exit code, once its teardown has blocked for a while

class BlockingTeardownCommunicator final : public Communicator {
 public:
  explicit BlockingTeardownCommunicator(std::chrono::seconds blocks)
      : Communicator(std::chrono::minutes(10)), blocks_(blocks) {}
  ~BlockingTeardownCommunicator() override {
    std::fputs("teardown began, waiting for the other ranks\n", stderr);
    std::this_thread::sleep_for(blocks_);
    std::_Exit(kTornDown);
  }
  std::string name() const override { return "blocking-teardown"; }
  int rank() const override { return 1; }
  int size() const override { return 2; }
  // A rank-local device failure, as CUDA_CHECK reports one.
  void all_reduce(torch::Tensor&, ReduceOp) override {
    throw LibraryError(
        "CUDA error at x.cpp:1: cudaStreamSynchronize failed: cudaErrorIllegalAddress: an illegal "
        "memory access was encountered");
  }
  std::unique_ptr<Work> all_reduce_async(torch::Tensor, ReduceOp, std::string) override { return nullptr; }
  void broadcast(torch::Tensor&, int) override {}
  torch::Tensor all_gather(const torch::Tensor& t) override { return t; }
  void barrier() override {}

 private:
  std::chrono::seconds blocks_;
};

// A failing step with the communicator alive, as in Trainer::train().
void failing_step(Communicator& comm) {
  torch::Tensor gradients = torch::ones({4});
  comm.all_reduce(gradients, ReduceOp::Sum);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class AbortPath : public ::testing::Test {
 protected:
  // The child re-runs this binary: LibTorch's threads make fork() alone unsafe.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(AbortPath, ARankLocalFailureEndsTheJobWithoutTearingDown) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EXIT(
      {
        BlockingTeardownCommunicator comm(std::chrono::seconds(60));
        end_job_on_failure([&] { failing_step(comm); },
                           [] { return std::string("failed in epoch 0 at optimiser step 5"); });
      },
      ::testing::ExitedWithCode(kExitFailure),
      "error: failed in epoch 0 at optimiser step 5: CUDA error .*cudaErrorIllegalAddress");
  EXPECT_LT(seconds_since(start), 10.0);
}

// The double is a fair stand-in: unwinding first does block in its teardown,
// and the cause is reported only after it (here: never).
TEST_F(AbortPath, UnwindingFirstWouldBlockInTheTeardown) {
  EXPECT_EXIT(
      {
        try {
          BlockingTeardownCommunicator comm(std::chrono::seconds(1));
          failing_step(comm);
        } catch (const std::exception& e) {
          end_job_for(e, "");
        }
      },
      ::testing::ExitedWithCode(kTornDown), "teardown began");
}

TEST_F(AbortPath, AFailureAllRanksAgreedOnPassesOn) {
  EXPECT_THROW(end_job_on_failure([]() -> int { throw AgreedFailure(kExitUsage, true); },
                                  [] { return std::string("start-up"); }),
               AgreedFailure);
  EXPECT_EQ(end_job_on_failure([] { return 7; }, [] { return std::string(); }), 7);
}

}  // namespace
}  // namespace cifar
