// Autocast scope and loss scaling (see precision.hpp).
#include "train/precision.hpp"

#include <ATen/autocast_mode.h>
#include <torch/version.h>


namespace cifar {

namespace {
// LibTorch 2.4 replaced the CUDA-specific autocast switches with per-device ones.
void set_cuda_autocast(bool enabled, at::ScalarType dtype) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  at::autocast::set_autocast_dtype(at::kCUDA, dtype);
  at::autocast::set_autocast_enabled(at::kCUDA, enabled);
#else
  at::autocast::set_autocast_gpu_dtype(dtype);
  at::autocast::set_enabled(enabled);
#endif
}
}  // namespace

AutocastScope::AutocastScope(Precision precision) {
  if (precision == Precision::Fp32) return;
  set_cuda_autocast(true, precision == Precision::Bf16 ? at::kBFloat16 : at::kHalf);
  active_ = true;
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  set_cuda_autocast(false, at::kHalf);
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

}  // namespace cifar
