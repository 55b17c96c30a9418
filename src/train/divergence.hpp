// The divergence guard (--on-nonfinite): a step whose averaged gradient holds
// a NaN or an infinity either ends the run (stop, exit code 5, nothing
// written after the last good step) or is skipped and counted (skip).
//
// The verdict needs no communication: after the all-reduce every rank holds
// the same averaged gradient, so every rank finds the same steps non-finite.
// A non-finite loss is covered through its gradient (NaN and infinity in the
// loss reach the gradient of its rank, and the average carries them to all).
//
// Where reading the verdict would synchronise an asynchronous device (CUDA)
// and `stop` is asked for, the verdict stays on the device — the first bad
// step, recorded by a few tiny kernels — until require_finite() at a point
// that synchronises anyway: before a checkpoint, the epoch's metrics, the
// model file. The bad update is then applied meanwhile, but nothing reaches
// a file. On the CPU, and for `skip` (whose decision must precede the
// update), the verdict is read at every step.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "config/choices.hpp"

namespace cifar {

class DivergenceGuard {
 public:
  // `every_step`: read the verdict at every step (CPU tensors: free).
  DivergenceGuard(OnNonFinite policy, bool every_step, torch::Device device);

  // After the gradient average and before the update of the optimiser step
  // that `steps_done` steps precede. `finite` is a 0-dim bool on the device.
  // Returns whether to apply the update.
  bool admit(const torch::Tensor& finite, long steps_done);

  // Ends the run on every rank with exit code 5 (Diverged) if a step was
  // found non-finite. `synchronize` false: only what is known on the host.
  void require_finite(bool synchronize);
  // Ends the run on every rank with exit code 5 if a parameter is not finite
  // (an update that overflowed from a finite gradient; either policy). Reads
  // the parameters: call where the state is about to be written anyway.
  void require_finite_parameters(const std::vector<torch::Tensor>& parameters, long steps_done) const;

  const long& skipped() const { return skipped_; }
  void restore_skipped(long skipped) { skipped_ = skipped; }

 private:
  OnNonFinite policy_;
  bool every_step_;
  torch::Tensor first_bad_step_;  // deferred verdict: the first non-finite step (1-based), 0 if none
  long diverged_step_ = 0;        // the same, once on the host
  long skipped_ = 0;
};

}  // namespace cifar
