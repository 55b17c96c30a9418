// --cuda-graphs: what cannot be captured is refused at start-up with the
// reason and the fix; what can is accepted. (Capture and replay themselves
// need a GPU: tests/gpu/step_test.cpp.)
#include <gtest/gtest.h>

#include "step/cuda_graph_step.hpp"

namespace cifar {
namespace {

RunConfig graphed() {
  RunConfig c;
  c.runtime.cuda_graphs = true;
  return c;
}

const torch::Device kGpu(torch::kCUDA, 0);

void expect_refused(const RunConfig& c, const torch::Device& device, const std::string& backend,
                    const std::string& reason) {
  const std::string why = cuda_graphs_refusal(c, device, backend);
  EXPECT_NE(why.find(reason), std::string::npos) << "got: " << why;
}

TEST(CudaGraphs, OffIsNeverRefused) {
  RunConfig c;
  c.training.precision = Precision::Fp16;
  c.training.accumulate = 4;
  EXPECT_EQ(cuda_graphs_refusal(c, torch::kCPU, "mpi"), "");
}

TEST(CudaGraphs, RefusesWhatCannotBeCaptured) {
  expect_refused(graphed(), torch::kCPU, "mpi", "needs a GPU");
  if (!cuda_graphs_compiled()) {
    expect_refused(graphed(), kGpu, "nccl", "build the cuda preset");
    return;  // the remaining reasons come after this one
  }
  expect_refused(graphed(), kGpu, "mpi", "--backend nccl");
  RunConfig fp16 = graphed();
  fp16.training.precision = Precision::Fp16;
  expect_refused(fp16, kGpu, "nccl", "--precision fp16");
  RunConfig accumulate = graphed();
  accumulate.training.accumulate = 2;
  expect_refused(accumulate, kGpu, "nccl", "--accumulate 1");
  RunConfig profile = graphed();
  profile.runtime.profile = true;
  expect_refused(profile, kGpu, "nccl", "--profile");
}

TEST(CudaGraphs, AcceptsNcclOnAGpuInFp32AndBf16) {
  if (!cuda_graphs_compiled()) {  // a CPU LibTorch: refused, saying which build to use
    expect_refused(graphed(), kGpu, "nccl", "build the cuda preset");
    return;
  }
  EXPECT_EQ(cuda_graphs_refusal(graphed(), kGpu, "nccl"), "");
  RunConfig bf16 = graphed();
  bf16.training.precision = Precision::Bf16;
  bf16.optim.lookahead_every = 5;
  EXPECT_EQ(cuda_graphs_refusal(bf16, kGpu, "nccl"), "");
}

}  // namespace
}  // namespace cifar
