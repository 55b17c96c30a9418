// Gathers the registries' names (see registries.hpp).
#include "app/registries.hpp"

#include "comm/backends.hpp"
#include "data/dataset.hpp"
#include "model/model.hpp"
#include "optim/optimizer.hpp"

namespace cifar {

RegisteredNames registered_names() {
  RegisteredNames names;
  names.datasets = dataset_names();
  names.models = model_names();
  names.optimizers = optimizer_names();
  for (const auto& name : names.optimizers)
    if (optimizer_supports_nesterov(name)) names.nesterov_optimizers.push_back(name);
  names.backends = backend_names();
  return names;
}

}  // namespace cifar
