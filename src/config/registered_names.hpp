// The names of the registered parts a configuration chooses among (datasets,
// models, optimisers, gradient backends). The registries live on the floors
// above config; main gathers their names (app/registries.hpp) and hands
// them to parse_config(), config_help() and validate(), which check a choice
// against them and list them in --help.
#pragma once

#include <string>
#include <vector>

namespace cifar {

struct RegisteredNames {
  std::vector<std::string> datasets;
  std::vector<std::string> models;
  std::vector<std::string> optimizers;
  std::vector<std::string> nesterov_optimizers;  // the optimisers --nesterov applies to
  std::vector<std::string> backends;             // besides "auto"
};

}  // namespace cifar
