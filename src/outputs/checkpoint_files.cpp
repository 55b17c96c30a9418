// Checkpoint file names (see checkpoint_files.hpp).
#include "outputs/checkpoint_files.hpp"

#include <algorithm>
#include <regex>
#include <tuple>

#include "data/training_position.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

const std::regex kNamePattern(R"(ckpt-e(\d+)-s(\d+)\.pt)");

}  // namespace

std::string checkpoint_file_name(const TrainingPosition& position) {
  return strprintf("ckpt-e%04d-s%06ld.pt", position.epoch, position.step);
}

bool is_checkpoint_file_name(const std::string& name) { return std::regex_match(name, kNamePattern); }

std::vector<std::string> list_checkpoints(const std::string& folder) {
  struct Entry {
    long step;
    long epoch;
    std::string path;
  };
  std::vector<Entry> entries;
  if (!paths::is_directory(folder)) return {};
  for (const std::string& name : paths::list(folder)) {
    std::smatch m;
    const std::string path = paths::join(folder, name);
    if (std::regex_match(name, m, kNamePattern) && paths::is_regular_file(path))
      entries.push_back({std::stol(m[2]), std::stol(m[1]), path});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.step, a.epoch, a.path) > std::tie(b.step, b.epoch, b.path);
  });
  std::vector<std::string> paths;
  for (auto& e : entries) paths.push_back(std::move(e.path));
  return paths;
}

}  // namespace cifar
