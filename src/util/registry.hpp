// The lookups every registry shares (models, datasets, optimisers, backends):
// a registry is a vector of entries, each with a `const char* name`, in the
// order --help lists them.
#pragma once

#include <string>
#include <vector>

#include <boost/algorithm/string/join.hpp>

#include "util/error.hpp"

namespace cifar {

template <typename Entry>
std::vector<std::string> registered_names(const std::vector<Entry>& registry) {
  std::vector<std::string> names;
  for (const auto& e : registry) names.emplace_back(e.name);
  return names;
}

// The entry called `name`, or ConfigError naming `option` and the valid names:
// "--optimizer: 'lamb' is not a known optimizer; valid names: adam, sgd".
template <typename Entry>
const Entry& find_registered(const std::vector<Entry>& registry, const std::string& name, const std::string& option) {
  for (const auto& e : registry)
    if (name == e.name) return e;
  throw ConfigError("--" + option + ": '" + name + "' is not a known " + option +
                    "; valid names: " + boost::algorithm::join(registered_names(registry), ", "));
}

}  // namespace cifar
