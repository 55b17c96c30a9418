// Mixed precision: autocast to bfloat16 (CPUs and GPUs) or float16 (GPUs)
// around the forward pass, and dynamic loss scaling for float16 (bfloat16 has
// float32's range and needs none). fp32 everywhere else.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "config/choices.hpp"
#include "util/stateful.hpp"

namespace cifar {

// Enables autocast for this thread's ops on `device`'s type while alive
// (no-op for fp32).
class AutocastScope {
 public:
  AutocastScope(Precision precision, torch::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool cuda_ = false;
  bool active_ = false;
};

// Dynamic loss scaling (PyTorch GradScaler's policy): scale the loss, unscale
// the averaged gradients, skip the step and halve the scale on inf/NaN, double
// it after `growth_interval` clean steps. Every rank holds the same averaged
// gradients, so every rank takes the same decision without communicating.
class LossScaler : public Stateful {
 public:
  // Its checkpoint entries: the scale and the clean steps since it last changed.
  static constexpr const char* kScaleKey = "loss_scale";
  static constexpr const char* kCleanStepsKey = "loss_scale_clean_steps";

  explicit LossScaler(bool enabled) : enabled_(enabled) {}
  torch::Tensor scale(const torch::Tensor& loss) const { return enabled_ ? loss * scale_ : loss; }
  // Unscales gradients in place; returns false when the step must be skipped.
  bool unscale_and_check(const std::vector<torch::Tensor>& params);
  double current_scale() const { return scale_; }
  int clean_steps() const { return clean_steps_; }
  // Continues from a checkpoint's scale and count of clean steps.
  void restore(double scale, int clean_steps) {
    scale_ = scale;
    clean_steps_ = clean_steps;
  }
  void save_state(StateDict& state) const override;
  void restore_state(const StateDict& state) override;

 private:
  bool enabled_;
  double scale_ = 65536.0;
  int clean_steps_ = 0;
  static constexpr int kGrowthInterval = 2000;
};

}  // namespace cifar
