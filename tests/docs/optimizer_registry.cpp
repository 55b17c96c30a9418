// src/optim/optimizer.cpp's registry with docs/extending.md's optimiser recipe.
#include "docs/registries_with_recipes.hpp"
#include "spliced/optimizer.cpp.inc"

namespace cifar::docs_example {
std::vector<std::string> optimizer_names() { return registered_names(registry()); }
bool optimizer_supports_nesterov(const std::string& name) {
  return find_registered(registry(), name, "optimizer").nesterov;
}
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimConfig& config,
                                                        const std::vector<ParameterGroup>& groups) {
  return find_registered(registry(), config.optimizer, "optimizer").make(config, groups);
}
}  // namespace cifar::docs_example
