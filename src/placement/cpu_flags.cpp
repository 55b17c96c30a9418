// The CPU's flags from /proc/cpuinfo (see cpu_flags.hpp).
#include "placement/cpu_flags.hpp"

#include <fstream>
#include <optional>
#include <sstream>

#include "util/paths.hpp"

namespace cifar {

namespace {

// The value of the first line of `cpuinfo` whose key is `key` ("flags",
// "vendor_id"), without the blanks around it; nullopt when there is none.
std::optional<std::string> first_value(const std::string& cpuinfo, const std::string& key) {
  std::istringstream in(cpuinfo);
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name != key) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return std::nullopt;
}

// <proc>/cpuinfo up to the first core's `key` line: the file has a block per core.
std::string first_core_line(const std::string& proc, const std::string& key) {
  std::ifstream file(paths::join(proc, "cpuinfo"));
  for (std::string line; std::getline(file, line);)
    if (line.rfind(key, 0) == 0) return line;
  return "";
}

}  // namespace

std::set<std::string> cpu_flags_from_cpuinfo(const std::string& cpuinfo) {
  std::set<std::string> flags;
  std::istringstream words(first_value(cpuinfo, "flags").value_or(""));
  for (std::string word; words >> word;) flags.insert(word);
  return flags;
}

std::set<std::string> read_cpu_flags(const std::string& proc) {
  return cpu_flags_from_cpuinfo(first_core_line(proc, "flags"));
}

std::string cpu_vendor_from_cpuinfo(const std::string& cpuinfo) {
  return first_value(cpuinfo, "vendor_id").value_or("");
}

std::string read_cpu_vendor(const std::string& proc) {
  return cpu_vendor_from_cpuinfo(first_core_line(proc, "vendor_id"));
}

}  // namespace cifar
