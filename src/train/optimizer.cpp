// The optimiser registry (see optimizer.hpp).
#include "train/optimizer.hpp"

#include "util/registry.hpp"

namespace cifar {
namespace {

using Parameters = std::vector<torch::Tensor>;

std::unique_ptr<torch::optim::Optimizer> make_adam(const OptimConfig& c, const Parameters& params) {
  return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(c.lr).weight_decay(c.weight_decay));
}

std::unique_ptr<torch::optim::Optimizer> make_sgd(const OptimConfig& c, const Parameters& params) {
  return std::make_unique<torch::optim::SGD>(
      params, torch::optim::SGDOptions(c.lr).momentum(c.momentum).nesterov(c.nesterov).weight_decay(c.weight_decay));
}

struct OptimizerEntry {
  const char* name;
  bool nesterov;  // takes --momentum and --nesterov
  std::unique_ptr<torch::optim::Optimizer> (*make)(const OptimConfig&, const Parameters&);
};

const std::vector<OptimizerEntry>& registry() {
  static const std::vector<OptimizerEntry> entries = {
      {"adam", false, make_adam},
      {"sgd", true, make_sgd},
  };
  return entries;
}

const OptimizerEntry& entry(const std::string& name) { return find_registered(registry(), name, "optimizer"); }

}  // namespace

std::vector<std::string> optimizer_names() { return registered_names(registry()); }

bool optimizer_supports_nesterov(const std::string& name) { return entry(name).nesterov; }

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimConfig& config, const Parameters& parameters) {
  return entry(config.optimizer).make(config, parameters);
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

double learning_rate_of(const torch::optim::Optimizer& optimizer) {
  return optimizer.param_groups().at(0).options().get_lr();
}

}  // namespace cifar
