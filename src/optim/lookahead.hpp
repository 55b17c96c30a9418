// Lookahead, as the CIFAR-10 speed-record recipes use it: every `every` optimiser
// steps, the weights (and BatchNorm statistics) are pulled towards their
// running average and the average is where training continues,
//
//   average = decay * average + (1 - decay) * weights;   weights = average
//   decay(step) = 0.95^every * (step / total_steps)^3
//
// so it does nothing early in the run and smooths more as the learning rate
// falls; the run ends on the average (finish()). Every rank holds the same
// weights after each step's all-reduce, so every rank computes the same
// average without communicating.
//
// The E1 record recipe averages its low-rate tail only: with
// last_steps the average starts as the weights `last_steps` steps before the
// end, and pulls follow every `every` steps from there; with a constant
// `decay` the ramp above is replaced by it (E1: 20 steps, every 4, 0.7).
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <vector>

#include "model/model.hpp"
#include "util/stateful.hpp"

namespace cifar {

struct LookaheadOptions {
  int every = 0;        // 0: off
  double decay = 0;     // > 0: this constant instead of the ramp
  long last_steps = 0;  // > 0: only over the run's last this many steps
};

class Lookahead : public Stateful {
 public:
  // Its checkpoint entry: the running average, as CPU tensors (absent when off).
  static constexpr const char* kAverageKey = "lookahead";

  // every == 0: off (every call does nothing).
  Lookahead(Model& model, int every, long total_steps) : Lookahead(model, LookaheadOptions{every}, total_steps) {}
  Lookahead(Model& model, const LookaheadOptions& options, long total_steps);

  bool enabled() const { return options_.every > 0; }
  // After optimiser step number `steps_done` (1-based).
  void after_step(long steps_done);
  // The run's end: the weights become the average.
  void finish();
  static double decay(int every, long steps_done, long total_steps);
  // A run resumed at another world size whose plan has another length.
  void set_total_steps(long total_steps) { total_steps_ = total_steps; }

  // The running average (float tensors of the model's state, in state_entries() order).
  const std::vector<torch::Tensor>& average() const { return average_; }
  // Both do nothing when off; on, restoring needs the average a run with it saved.
  void save_state(StateDict& state) const override;
  void restore_state(const StateDict& state) override;

 private:
  void pull(double decay);
  void restart_average();  // the average becomes the weights
  // The step after which the average starts (as the weights), 0: construction.
  long start_step() const { return options_.last_steps > 0 ? std::max(0L, total_steps_ - options_.last_steps) : 0; }

  LookaheadOptions options_;
  long total_steps_;
  std::vector<torch::Tensor> state_;    // the model's floating-point parameters and buffers
  std::vector<torch::Tensor> average_;  // their running average
};

}  // namespace cifar
