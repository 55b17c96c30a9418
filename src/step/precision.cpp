// Autocast scope and loss scaling (see precision.hpp).
#include "step/precision.hpp"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include "util/error.hpp"

namespace cifar {

namespace {
// LibTorch 2.4 replaced the device-specific autocast switches with per-device-type ones.
void set_autocast(bool cuda, bool enabled, at::ScalarType dtype) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  const auto device = cuda ? at::kCUDA : at::kCPU;
  at::autocast::set_autocast_dtype(device, dtype);
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}
}  // namespace

AutocastScope::AutocastScope(Precision precision, torch::Device device) : cuda_(device.is_cuda()) {
  if (precision == Precision::Fp32) return;
  // Autocast to the wrong type would train silently in it: auto is resolved
  // at start-up (step/precision_choice.hpp), never handed here.
  if (precision == Precision::Auto) throw Error("autocast needs a resolved precision, not auto");
  set_autocast(cuda_, true, precision == Precision::Bf16 ? at::kBFloat16 : at::kHalf);
  active_ = true;
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  set_autocast(cuda_, false, cuda_ ? at::kHalf : at::kBFloat16);
  at::autocast::clear_cache();
}

bool LossScaler::unscale_and_check(const std::vector<torch::Tensor>& params) {
  if (!enabled_) return true;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> finite;
  for (const auto& p : params) {
    p.mutable_grad().div_(scale_);
    finite.push_back(torch::isfinite(p.grad()).all());
  }
  const bool ok = torch::stack(finite).all().item<bool>();
  if (!ok) {
    scale_ /= 2.0;
    clean_steps_ = 0;
    return false;
  }
  if (++clean_steps_ >= kGrowthInterval) {
    scale_ *= 2.0;
    clean_steps_ = 0;
  }
  return true;
}

void LossScaler::save_state(StateDict& state) const {
  state.insert(std::string(kScaleKey), scale_);
  state.insert(std::string(kCleanStepsKey), static_cast<int64_t>(clean_steps_));
}

void LossScaler::restore_state(const StateDict& state) {
  restore(state.at(std::string(kScaleKey)).toDouble(), static_cast<int>(state.at(std::string(kCleanStepsKey)).toInt()));
}

}  // namespace cifar
