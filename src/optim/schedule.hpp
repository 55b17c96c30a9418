// Learning-rate schedules, as a pure function of the optimiser step:
//   constant — linear warm-up to the peak, then flat;
//   cosine   — linear warm-up, then cosine decay to 0 at the last step;
//   onecycle — PyTorch's OneCycleLR shape: from peak/25 up to the peak over the
//              warm-up (30% of the run when no warm-up is given), then cosine
//              down to peak/1e4.
//   triangle — the CIFAR-10 speed-record recipes' shape (airbench): linear from
//              0.2 x peak up to the peak at the end of the warm-up (23% of the
//              run when no warm-up is given), then linear down to 0.07 x peak
//              at the last step.
//   linear   — linear warm-up, then linear decay from the peak to 0 at the
//              last step (the Muon record recipes: peak x (1 - step/steps)).
// Any of them with a low-rate tail (the E1 record recipe's): the
// shape runs over the first total_steps - tail_steps steps, and the rate never
// falls below floor x peak, where it holds in the tail.
#pragma once

#include "config/choices.hpp"
#include "config/run_config.hpp"

namespace cifar {

struct ScheduleOptions {
  ScheduleKind kind = ScheduleKind::Constant;
  double peak_lr = 1e-3;
  long total_steps = 1;
  long warmup_steps = 0;
  long tail_steps = 0;  // the last steps, after the shape's end
  double floor = 0;     // fraction of peak_lr
  // The steps the shape runs over (Muon's progress runs over them too).
  long shape_steps() const { return total_steps - tail_steps; }
};

double learning_rate(const ScheduleOptions& options, long step);

// The run's schedule from its [optim] options: --lr times `lr_scale` (an
// --elastic-batch per-rank resume's; exactly 1 otherwise) over `total_steps`
// optimiser steps after `warmup_steps`, its shape ending --lr-tail-epochs (of
// `steps_per_epoch` steps) early.
ScheduleOptions make_schedule(const OptimConfig& optim, double lr_scale, long total_steps, long warmup_steps,
                              long steps_per_epoch);

}  // namespace cifar
