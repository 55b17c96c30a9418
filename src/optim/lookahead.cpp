// Lookahead averaging of the weights (see lookahead.hpp).
#include "optim/lookahead.hpp"

#include <cmath>

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {

Lookahead::Lookahead(Model& model, const LookaheadOptions& options, long total_steps)
    : options_(options), total_steps_(total_steps) {
  if (options_.every <= 0) return;
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : state_entries(model)) {
    if (!tensor.is_floating_point()) continue;  // e.g. BatchNorm's step counter
    state_.push_back(tensor);
    average_.push_back(tensor.detach().clone());
  }
}

double Lookahead::decay(int every, long steps_done, long total_steps) {
  const double progress = static_cast<double>(steps_done) / static_cast<double>(std::max(1L, total_steps));
  return std::pow(0.95, every) * progress * progress * progress;
}

void Lookahead::after_step(long steps_done) {
  if (options_.every <= 0) return;
  const long start = start_step();
  if (start > 0 && steps_done == start) {
    restart_average();
    return;
  }
  if (steps_done <= start || (steps_done - start) % options_.every != 0) return;
  pull(options_.decay > 0 ? options_.decay : decay(options_.every, steps_done, total_steps_));
}

void Lookahead::restart_average() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < state_.size(); ++i) average_[i].copy_(state_[i]);
}

void Lookahead::finish() {
  if (options_.every > 0) pull(1.0);
}

void Lookahead::pull(double decay) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < state_.size(); ++i) {
    average_[i].lerp_(state_[i], 1.0 - decay);
    state_[i].copy_(average_[i]);
  }
}

void Lookahead::save_state(StateDict& state) const {
  if (!enabled()) return;
  c10::List<at::Tensor> average;
  for (const auto& t : average_) average.push_back(t.to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true));
  state.insert(std::string(kAverageKey), average);
}

void Lookahead::restore_state(const StateDict& state) {
  if (!enabled()) return;
  const auto it = state.find(std::string(kAverageKey));
  if (it == state.end()) throw CheckpointError("it has no lookahead average, but this run uses --lookahead-every");
  const std::vector<at::Tensor> average = it->value().toTensorVector();
  CIFAR_CHECK(
      average.size() == average_.size(), CheckpointError,
      strprintf("the checkpoint's lookahead average has %zu tensors, this model %zu", average.size(), average_.size()));
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < average.size(); ++i) average_[i].copy_(average[i]);
}

}  // namespace cifar
