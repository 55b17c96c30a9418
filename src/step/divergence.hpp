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
//
// A run can also fail numerically without a non-finite step: most of its
// steps skipped, an evaluation that gives NaN (BatchNorm statistics reached
// by a NaN forward pass of a skipped step), or a loss that exploded while
// staying finite (Adam at a huge --lr). require_sound_epoch() judges each
// epoch's losses and skip count against --max-loss and
// --max-skipped-fraction before anything of that epoch is written.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "config/choices.hpp"
#include "config/run_config.hpp"
#include "model/model.hpp"

namespace cifar {

// What an epoch's end reports, as every rank holds it (the losses are
// all-reduced, the skip count is the same everywhere).
struct EpochOutcome {
  int epoch = 0;
  long steps = 0;         // optimiser steps done in the run so far
  long skipped = 0;       // of them, skipped (--on-nonfinite skip)
  double train_loss = 0;  // the epoch's mean; NaN when no batch had a finite loss
  bool evaluated = false;
  double test_loss = 0;
};

// The advice of a divergence message: the options that set the step's size
// for `optim`'s optimiser (Muon's own first).
std::string lower_rate_advice(const OptimConfig& optim);

class DivergenceGuard {
 public:
  // `every_step`: read the verdict at every step (CPU tensors: free).
  // `rate_advice` (lower_rate_advice()) ends every message.
  DivergenceGuard(OnNonFinite policy, bool every_step, torch::Device device, std::string rate_advice);

  // After the gradient average and before the update of the optimiser step
  // that `steps_done` steps precede. `finite` is a 0-dim bool on the device.
  // Returns whether to apply the update.
  bool admit(const torch::Tensor& finite, long steps_done);

  // Ends the run on every rank with exit code 5 (Diverged) if a step was
  // found non-finite. `synchronize` false: only what is known on the host.
  void require_finite(bool synchronize);
  // Ends the run on every rank with exit code 5 if a parameter (or another
  // tensor of the model's state given with them, such as BatchNorm
  // statistics) is not finite (an update that overflowed from a finite
  // gradient; either policy). Reads them: call where the state is about to
  // be written anyway.
  void require_finite_parameters(const std::vector<torch::Tensor>& parameters, long steps_done) const;

  // Every rank alike, before a checkpoint or the model file is written:
  // require_finite(), then require_finite_parameters() over `model`'s
  // trainable parameters and its buffers (a skipped step's NaN forward pass
  // reaches the BatchNorm statistics).
  void require_finite_state(Model& model, long steps_done);

  // Ends the run on every rank with exit code 5 when epoch_problem() finds
  // one: call before the epoch's metrics row, checkpoint and model file.
  void require_sound_epoch(const TrainingConfig& limits, const EpochOutcome& outcome) const;

  const long& skipped() const { return skipped_; }
  void restore_skipped(long skipped) { skipped_ = skipped; }

 private:
  std::string rate_advice_;
  OnNonFinite policy_;
  bool every_step_;
  torch::Tensor first_bad_step_;  // deferred verdict: the first non-finite step (1-based), 0 if none
  long diverged_step_ = 0;        // the same, once on the host
  long skipped_ = 0;
};

// "" for a sound epoch; else what failed, each limit named with its value:
// a loss that is not finite or above --max-loss, or more than
// --max-skipped-fraction of the steps so far skipped.
std::string epoch_problem(const TrainingConfig& limits, const EpochOutcome& outcome);

}  // namespace cifar
