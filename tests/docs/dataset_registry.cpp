// src/data/dataset.cpp's registry with docs/extending.md's dataset recipe.
#include "docs/registries_with_recipes.hpp"
#include "spliced/dataset.cpp.inc"

namespace cifar::docs_example {
std::vector<std::string> dataset_names() { return registered_names(registry()); }
Dataset load_dataset(const DataConfig& config, SplitRequest request) {
  return find_registered(registry(), config.dataset, "dataset").load(config, request);
}
}  // namespace cifar::docs_example
