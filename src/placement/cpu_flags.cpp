// The CPU's flags from /proc/cpuinfo (see cpu_flags.hpp).
#include "placement/cpu_flags.hpp"

#include <fstream>
#include <sstream>

#include "util/paths.hpp"

namespace cifar {

std::set<std::string> cpu_flags_from_cpuinfo(const std::string& cpuinfo) {
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (key != "flags") continue;
    std::istringstream words(line.substr(colon + 1));
    std::set<std::string> flags;
    for (std::string word; words >> word;) flags.insert(word);
    return flags;
  }
  return {};
}

std::set<std::string> read_cpu_flags(const std::string& proc) {
  // Only as far as the first core's flags: the file has a block per core.
  std::ifstream file(paths::join(proc, "cpuinfo"));
  for (std::string line; std::getline(file, line);)
    if (line.rfind("flags", 0) == 0) return cpu_flags_from_cpuinfo(line);
  return {};
}

}  // namespace cifar
