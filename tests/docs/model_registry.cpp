// src/model/model.cpp's registry with docs/extending.md's model recipe.
#include "docs/registries_with_recipes.hpp"
#include "spliced/model.cpp.inc"

namespace cifar::docs_example {
std::vector<std::string> model_names() { return registered_names(registry()); }
std::shared_ptr<Model> make_model(const std::string& name) { return find_registered(registry(), name, "model").make(); }
}  // namespace cifar::docs_example
