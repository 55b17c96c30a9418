// CUDA_VISIBLE_DEVICES (see visible_devices.hpp).
#include "placement/visible_devices.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace cifar {
namespace {

bool is_index(const std::string& entry) {
  return !entry.empty() && std::all_of(entry.begin(), entry.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool is_uuid(const std::string& entry) {
  return (entry.rfind("GPU-", 0) == 0 || entry.rfind("MIG-", 0) == 0) && entry.size() > 4;
}

}  // namespace

std::vector<std::string> granted_gpu_entries(const char* value) {
  std::vector<std::string> entries;
  if (value == nullptr) return entries;
  std::istringstream list(value);
  for (std::string entry; std::getline(list, entry, ',');) {
    entry.erase(0, entry.find_first_not_of(" \t"));
    entry.erase(entry.find_last_not_of(" \t") + 1);
    if (!is_index(entry) && !is_uuid(entry)) break;  // CUDA ignores this entry and every one after it
    entries.push_back(entry);
  }
  return entries;
}

std::optional<int> granted_gpu_count(const char* value) {
  if (value == nullptr) return std::nullopt;
  return static_cast<int>(granted_gpu_entries(value).size());
}

int gpus_held_to(bool cuda_requested, bool driver_runs_build, const char* cuda_visible_devices) {
  if (!cuda_requested || !driver_runs_build) return -1;
  return granted_gpu_count(cuda_visible_devices).value_or(-1);
}

}  // namespace cifar
