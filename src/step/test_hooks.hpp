// TestHooks: TEST-ONLY. The one point where the tests reach into the
// training loop, once per micro-batch: the sample trace
// (CIFAR_MPI_TEST_SAMPLE_TRACE, step/sample_trace.hpp) and a rank's injected
// fault (CIFAR_FAULT_INJECT, process/fault_injection.hpp). Both variables
// unset (always, outside the tests), it costs two branches per micro-batch.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "process/fault_injection.hpp"
#include "step/sample_trace.hpp"

namespace cifar {

class TestHooks {
 public:
  TestHooks() = default;  // none
  // Reads both variables; ConfigError naming CIFAR_FAULT_INJECT when it is malformed.
  explicit TestHooks(int rank);

  // Before micro-batch `batch` of `epoch` trains; `starts_step`: it begins
  // optimiser step `step` (an injected fault is thrown there).
  void before_batch(int epoch, long step, long batch, bool starts_step, const torch::Tensor& indices);

 private:
  std::unique_ptr<SampleTrace> trace_;
  FaultInjector faults_;
};

}  // namespace cifar
