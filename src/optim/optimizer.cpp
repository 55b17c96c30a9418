// The optimiser registry (see optimizer.hpp).
#include "optim/optimizer.hpp"

#include "optim/fused_optimizer.hpp"
#include "util/registry.hpp"

namespace cifar {
namespace {

using Groups = std::vector<torch::optim::OptimizerParamGroup>;

// One torch group per model group, with the group's own options.
template <typename Options>
Groups torch_groups(const std::vector<ParameterGroup>& groups, const Options& base, double lr, double weight_decay) {
  Groups out;
  for (const auto& g : groups) {
    auto options = std::make_unique<Options>(base);
    options->lr(lr * g.lr_scale).weight_decay(weight_decay * g.weight_decay_scale);
    out.emplace_back(g.parameters, std::move(options));
  }
  return out;
}

// --fused-optimizer: the graph-safe subclass (fused_optimizer.hpp), same options and state.
std::unique_ptr<torch::optim::Optimizer> make_adam(const OptimConfig& c, const std::vector<ParameterGroup>& groups) {
  const torch::optim::AdamOptions base(c.lr);
  auto param_groups = torch_groups(groups, base, c.lr, c.weight_decay);
  if (c.fused) return std::make_unique<GraphSafeAdam>(std::move(param_groups), base);
  return std::make_unique<torch::optim::Adam>(std::move(param_groups), base);
}

std::unique_ptr<torch::optim::Optimizer> make_sgd(const OptimConfig& c, const std::vector<ParameterGroup>& groups) {
  const auto base = torch::optim::SGDOptions(c.lr).momentum(c.momentum).nesterov(c.nesterov);
  auto param_groups = torch_groups(groups, base, c.lr, c.weight_decay);
  if (c.fused) return std::make_unique<GraphSafeSGD>(std::move(param_groups), base);
  return std::make_unique<torch::optim::SGD>(std::move(param_groups), base);
}

struct OptimizerEntry {
  const char* name;
  bool nesterov;  // takes --momentum and --nesterov
  std::unique_ptr<torch::optim::Optimizer> (*make)(const OptimConfig&, const std::vector<ParameterGroup>&);
};

const std::vector<OptimizerEntry>& registry() {
  static const std::vector<OptimizerEntry> entries = {
      {"adam", false, make_adam},
      {"sgd", true, make_sgd},
  };
  return entries;
}

const OptimizerEntry& entry(const std::string& name) { return find_registered(registry(), name, "optimizer"); }

std::vector<ParameterGroup> non_empty(const std::vector<ParameterGroup>& groups) {
  std::vector<ParameterGroup> out;
  for (const auto& g : groups)
    if (!g.parameters.empty()) out.push_back(g);
  return out;
}

}  // namespace

std::vector<std::string> optimizer_names() { return registered_names(registry()); }

bool optimizer_supports_nesterov(const std::string& name) { return entry(name).nesterov; }

Optimizer::Optimizer(const OptimConfig& config, const std::vector<ParameterGroup>& groups)
    : groups_(non_empty(groups)) {
  optimizer_ = entry(config.optimizer).make(config, groups_);
  graph_safe_ = dynamic_cast<GraphSafeStep*>(optimizer_.get());
}

void Optimizer::set_learning_rate(double lr, int epoch) {
  auto& torch_groups = optimizer_->param_groups();
  for (size_t i = 0; i < torch_groups.size(); ++i) {
    const ParameterGroup& g = groups_[i];
    const bool training = g.train_epochs < 0 || epoch < g.train_epochs;
    const double rate = training ? lr * g.lr_scale : 0.0;
    if (graph_safe_) {
      graph_safe_->set_learning_rate(i, rate);  // the device tensor a captured step reads
    } else {
      torch_groups[i].options().set_lr(rate);
    }
  }
}

double learning_rate_of(const torch::optim::Optimizer& optimizer) {
  return optimizer.param_groups().at(0).options().get_lr();
}

}  // namespace cifar
