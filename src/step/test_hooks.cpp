// The tests' hooks into the training loop (see test_hooks.hpp).
#include "step/test_hooks.hpp"

namespace cifar {

TestHooks::TestHooks(int rank) : trace_(std::make_unique<SampleTrace>(rank)), faults_(rank) {}

void TestHooks::before_batch(int epoch, long step, long batch, bool starts_step, const torch::Tensor& indices) {
  if (trace_) trace_->record(epoch, step, batch, indices);
  if (starts_step) faults_.at_step(step);
}

}  // namespace cifar
