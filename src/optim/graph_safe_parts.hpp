// Pieces the graph-safe optimisers (fused_optimizer.hpp, muon.hpp) share: the
// key LibTorch keeps a parameter's state under, the learning rate as a device
// tensor, and the step() contract around a closure.
#pragma once

#include <torch/torch.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace cifar {

// The key torch::optim keeps a parameter's state under: a std::string of the
// TensorImpl's address in 1.x, the address itself in 2.x.
template <typename Map>
typename Map::key_type state_key(const Map& /*state*/, const torch::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream os;  // what c10::guts::to_string(p.unsafeGetTensorImpl()) gives
    os << static_cast<const void*>(p.unsafeGetTensorImpl());
    return os.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

// The learning rate's tensor: float32 on GPUs, which the CUDA kernels read as
// float; float64 on CPUs, which read it as a double as the eager optimisers do.
inline torch::Tensor learning_rate_tensor(const std::vector<torch::Tensor>& params, double lr) {
  const torch::Device device = params.empty() ? torch::Device(torch::kCPU) : params.front().device();
  const auto dtype = device.is_cpu() ? torch::kFloat64 : torch::kFloat32;
  return at::scalar_tensor(lr, torch::TensorOptions().dtype(dtype).device(device));
}

inline std::vector<torch::Tensor> initial_rates(const std::vector<torch::optim::OptimizerParamGroup>& groups) {
  std::vector<torch::Tensor> rates;
  for (const auto& g : groups) rates.push_back(learning_rate_tensor(g.params(), g.options().get_lr()));
  return rates;
}

// torch::optim::Optimizer::step's contract: the closure's loss, computed
// with gradients on, then `update` without them.
template <typename Update>
torch::Tensor step_with(const torch::optim::Optimizer::LossClosure& closure, Update&& update) {
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode grad_mode(true);
    loss = closure();
  }
  torch::NoGradGuard no_grad;
  update();
  return loss;
}

}  // namespace cifar
