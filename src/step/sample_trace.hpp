// SampleTrace: TEST-ONLY. With the environment variable
// CIFAR_MPI_TEST_SAMPLE_TRACE=PREFIX set, each rank appends one line per
// micro-batch to PREFIX.rank<R>:
//
//   epoch <e> step <s> batch <b> rank <r>: <sample index> <sample index> ...
//
// (step: the optimiser step the micro-batch belongs to, 0-based). The
// checkpoint tests use it to show that a run resumed at another world size
// trains every sample of the epoch exactly once (tests/checkpoint/elastic.sh).
// Unset — always, outside the tests — it costs one branch per micro-batch;
// there is no command-line option on purpose.
#pragma once

#include <torch/torch.h>

#include <fstream>
#include <memory>

namespace cifar {

class SampleTrace {
 public:
  explicit SampleTrace(int rank);
  void record(int epoch, long step, long batch, const torch::Tensor& indices);

 private:
  int rank_;
  std::unique_ptr<std::ofstream> out_;  // null: tracing off
};

}  // namespace cifar
