// Per-task GPU binding (see gpu_binding.hpp).
#include "gpu/gpu_binding.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

namespace cifar::gpu {
namespace {

// "domain:bus:device.function" in lower case with the domain as a number:
// CUDA writes it with 8 digits, sysfs with 4.
std::string bus_key(const std::string& id) {
  std::string key = id;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto first = key.find(':');
  if (first == std::string::npos || first == key.rfind(':')) return key;  // no domain
  return std::to_string(std::strtoul(key.substr(0, first).c_str(), nullptr, 16)) + key.substr(first);
}

}  // namespace

bool one_gpu_per_rank(const std::vector<std::string>& single_gpu_ids) {
  std::set<std::string> seen;
  for (const auto& id : single_gpu_ids)
    if (id.empty() || !seen.insert(bus_key(id)).second) return false;
  return !single_gpu_ids.empty();
}

}  // namespace cifar::gpu
