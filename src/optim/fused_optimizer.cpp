// Graph-safe Adam and SGD (see fused_optimizer.hpp).
#include "optim/fused_optimizer.hpp"

#include <torch/version.h>

#include <string>

#include "optim/given_options.hpp"
#include "optim/graph_safe_parts.hpp"
#include "util/error.hpp"

// ATen's fused multi-tensor kernels take a tensor learning rate since 2.2 and
// have CPU implementations since 2.4; older LibTorch (Debian's 1.13) steps
// with plain tensor math of the same semantics.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define CIFAR_FUSED_OPTIMIZER_KERNELS 1
#else
#define CIFAR_FUSED_OPTIMIZER_KERNELS 0
#endif

namespace cifar {
namespace {

using torch::optim::AdamOptions;
using torch::optim::AdamParamState;
using torch::optim::SGDOptions;
using torch::optim::SGDParamState;

// The entries of `lists` whose parameter (lists[0]) has a gradient, and the gradients.
std::vector<std::vector<torch::Tensor>> with_gradients(const std::vector<std::vector<torch::Tensor>>& lists) {
  std::vector<std::vector<torch::Tensor>> out(lists.size() + 1);
  for (size_t i = 0; i < lists[0].size(); ++i) {
    const torch::Tensor& grad = lists[0][i].grad();
    if (!grad.defined()) continue;
    for (size_t l = 0; l < lists.size(); ++l)
      if (!lists[l].empty()) out[l].push_back(lists[l][i]);
    out[lists.size()].push_back(grad);
  }
  return out;
}

#if !CIFAR_FUSED_OPTIMIZER_KERNELS
// torch::optim::Adam's update, with the rate and step count read from tensors.
void adam_math(const torch::Tensor& p, const torch::Tensor& grad, torch::Tensor& exp_avg, torch::Tensor& exp_avg_sq,
               torch::Tensor& step, const torch::Tensor& lr, const AdamOptions& o) {
  const auto [beta1, beta2] = o.betas();
  step.add_(1);
  const torch::Tensor t = step.to(lr.scalar_type());
  const torch::Tensor bias_correction1 = 1 - at::pow(beta1, t);
  const torch::Tensor bias_correction2 = 1 - at::pow(beta2, t);
  const torch::Tensor g = o.weight_decay() != 0 ? grad.add(p, o.weight_decay()) : grad;
  exp_avg.mul_(beta1).add_(g, 1 - beta1);
  exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2);
  const torch::Tensor denom = (exp_avg_sq.sqrt() / bias_correction2.sqrt()).add_(o.eps());
  p.sub_(exp_avg / denom * (lr / bias_correction1));
}

// torch::optim::SGD's update (first step: the buffer becomes the gradient).
void sgd_math(const torch::Tensor& p, const torch::Tensor& grad, torch::Tensor* buffer, bool first_step,
              const torch::Tensor& lr, const SGDOptions& o) {
  torch::Tensor d = o.weight_decay() != 0 ? grad.add(p, o.weight_decay()) : grad;
  if (buffer) {
    if (first_step) {
      buffer->copy_(d);
    } else {
      buffer->mul_(o.momentum()).add_(d, 1 - o.dampening());
    }
    d = o.nesterov() ? d.add(*buffer, o.momentum()) : *buffer;
  }
  p.sub_(d * lr);
}
#endif

}  // namespace

bool GraphSafeStep::uses_fused_kernels() { return CIFAR_FUSED_OPTIMIZER_KERNELS != 0; }

// ---- Adam -----------------------------------------------------------------

GraphSafeAdam::GraphSafeAdam(std::vector<torch::optim::OptimizerParamGroup> groups, AdamOptions defaults)
    : torch::optim::Adam(groups, defaults) {
  keep_given_options(*this, groups);
  lrs_ = initial_rates(param_groups());
  for (const auto& g : param_groups()) {
    if (static_cast<const AdamOptions&>(g.options()).amsgrad())
      throw Error("the graph-safe Adam does not implement amsgrad");
  }
}

void GraphSafeAdam::set_learning_rate(size_t group, double lr) {
  param_groups().at(group).options().set_lr(lr);
  lrs_.at(group).fill_(lr);
}

void GraphSafeAdam::prepare_state() {
  if (!groups_.empty()) return;
  for (auto& group : param_groups()) {
    GroupState s;
    for (const auto& p : group.params()) {
      auto& slot = state_[state_key(state_, p)];
      if (!slot) {  // as torch::optim::Adam starts a parameter's state
        auto fresh = std::make_unique<AdamParamState>();
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& st = static_cast<AdamParamState&>(*slot);
      s.params.push_back(p);
      s.exp_avgs.push_back(st.exp_avg());
      s.exp_avg_sqs.push_back(st.exp_avg_sq());
      s.steps.push_back(at::scalar_tensor(static_cast<double>(st.step()),
                                          torch::TensorOptions().dtype(torch::kFloat32).device(p.device())));
    }
    groups_.push_back(std::move(s));
  }
}

void GraphSafeAdam::step_group(size_t g) {
  const auto& o = static_cast<const AdamOptions&>(param_groups()[g].options());
  const GroupState& s = groups_[g];
  auto l = with_gradients({s.params, s.exp_avgs, s.exp_avg_sqs, s.steps});
  if (l[0].empty()) return;
#if CIFAR_FUSED_OPTIMIZER_KERNELS
  const auto [beta1, beta2] = o.betas();
  at::_foreach_add_(l[3], 1);  // the kernels read the incremented count, as PyTorch's fused Adam does
  at::_fused_adam_(l[0], l[4], l[1], l[2], {}, l[3], lrs_[g], beta1, beta2, o.weight_decay(), o.eps(),
                   /*amsgrad=*/false, /*maximize=*/false);
#else
  for (size_t i = 0; i < l[0].size(); ++i) adam_math(l[0][i], l[4][i], l[1][i], l[2][i], l[3][i], lrs_[g], o);
#endif
}

torch::Tensor GraphSafeAdam::step(LossClosure closure) {
  return step_with(closure, [this] {
    prepare_state();
    for (size_t g = 0; g < groups_.size(); ++g) step_group(g);
  });
}

// The device step counts go into the host state that Adam::save() writes.
void GraphSafeAdam::save(torch::serialize::OutputArchive& archive) const {
  for (const GroupState& s : groups_) {
    for (size_t i = 0; i < s.params.size(); ++i) {
      auto& st = static_cast<AdamParamState&>(*state_.at(state_key(state_, s.params[i])));
      st.step(static_cast<int64_t>(s.steps[i].item<double>()));
    }
  }
  torch::optim::Adam::save(archive);
}

// Loading replaces the state objects: the lists are rebuilt at the next step.
void GraphSafeAdam::load(torch::serialize::InputArchive& archive) {
  torch::optim::Adam::load(archive);
  groups_.clear();
}

// ---- SGD ------------------------------------------------------------------

GraphSafeSGD::GraphSafeSGD(std::vector<torch::optim::OptimizerParamGroup> groups, SGDOptions defaults)
    : torch::optim::SGD(groups, defaults) {
  keep_given_options(*this, groups);
  lrs_ = initial_rates(param_groups());
}

void GraphSafeSGD::set_learning_rate(size_t group, double lr) {
  param_groups().at(group).options().set_lr(lr);
  lrs_.at(group).fill_(lr);
}

// A group's buffers exist after its first step (or a checkpoint's); until
// then they are made here and set to the first gradient by that step.
void GraphSafeSGD::prepare_state() {
  if (!groups_.empty()) return;
  for (auto& group : param_groups()) {
    GroupState s;
    const bool momentum = static_cast<const SGDOptions&>(group.options()).momentum() != 0;
    for (const auto& p : group.params()) {
      s.params.push_back(p);
      if (!momentum) continue;
      auto& slot = state_[state_key(state_, p)];
      if (slot) {
        s.first_step = false;
      } else {
        auto fresh = std::make_unique<SGDParamState>();
        fresh->momentum_buffer(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      s.buffers.push_back(static_cast<SGDParamState&>(*slot).momentum_buffer());
    }
    groups_.push_back(std::move(s));
  }
}

void GraphSafeSGD::step_group(size_t g) {
  const auto& o = static_cast<const SGDOptions&>(param_groups()[g].options());
  GroupState& s = groups_[g];
  auto l = with_gradients({s.params, s.buffers});
  if (l[0].empty()) return;
#if CIFAR_FUSED_OPTIMIZER_KERNELS
  at::_fused_sgd_(l[0], l[2], l[1], o.weight_decay(), o.momentum(), lrs_[g], o.dampening(), o.nesterov(),
                  /*maximize=*/false, s.first_step);
#else
  for (size_t i = 0; i < l[0].size(); ++i)
    sgd_math(l[0][i], l[2][i], l[1].empty() ? nullptr : &l[1][i], s.first_step, lrs_[g], o);
#endif
  s.first_step = false;
}

torch::Tensor GraphSafeSGD::step(LossClosure closure) {
  return step_with(closure, [this] {
    prepare_state();
    for (size_t g = 0; g < groups_.size(); ++g) step_group(g);
  });
}

void GraphSafeSGD::load(torch::serialize::InputArchive& archive) {
  torch::optim::SGD::load(archive);
  groups_.clear();
}

}  // namespace cifar
