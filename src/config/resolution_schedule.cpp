// Parsing and lookup of --resolution-schedule (see resolution_schedule.hpp).
#include "config/resolution_schedule.hpp"

#include <sstream>

#include "util/error.hpp"

namespace cifar {
namespace {

constexpr const char* kOption = "--resolution-schedule";

[[noreturn]] void refuse(const std::string& text, const std::string& why) {
  throw ConfigError(std::string(kOption) + " '" + text + "': " + why +
                    " (write size:epochs entries and a last size alone, e.g. 24:3,28:3,32)");
}

// A whole decimal number, nothing else ("3", not "3x" or "").
int whole_number(const std::string& word, const std::string& text, const char* what) {
  if (word.empty() || word.size() > 6 || word.find_first_not_of("0123456789") != std::string::npos)
    refuse(text, std::string("'") + word + "' is not a whole number of " + what);
  return std::stoi(word);
}

int checked_size(const std::string& word, const std::string& text) {
  const int size = whole_number(word, text, "pixels");
  if (size < kMinResolution || size > kMaxResolution)
    refuse(text, "sizes must be between " + std::to_string(kMinResolution) + " and " + std::to_string(kMaxResolution) +
                     " pixels, got " + word);
  return size;
}

}  // namespace

ResolutionSchedule ResolutionSchedule::parse(const std::string& text) {
  ResolutionSchedule s;
  if (text.empty() || text == "\"\"") return s;  // "" as the run log prints the empty schedule
  std::vector<std::string> entries;
  std::istringstream in(text);
  for (std::string entry; std::getline(in, entry, ',');) entries.push_back(entry);
  if (text.back() == ',') entries.emplace_back();
  for (size_t i = 0; i + 1 < entries.size(); ++i) {
    const std::string& entry = entries[i];
    const auto colon = entry.find(':');
    if (colon == std::string::npos) refuse(text, "entry '" + entry + "' needs a number of epochs (size:epochs)");
    const int epochs = whole_number(entry.substr(colon + 1), text, "epochs");
    if (epochs < 1) refuse(text, "entry '" + entry + "' must last at least one epoch");
    s.stages.push_back({checked_size(entry.substr(0, colon), text), epochs});
  }
  const std::string& last = entries.back();
  if (last.find(':') != std::string::npos)
    refuse(text, "the last entry '" + last + "' must be a size alone: it holds to the end of the run");
  s.final_size = checked_size(last, text);
  return s.normalized();
}

// One schedule, one text: "24:2,24:1,28" is "24:3,28", "28:3,28" is "28",
// and 32 px throughout ("32", "32:2,32") is the empty schedule, the stored
// size: a resume compares schedules, and the same training must match.
ResolutionSchedule ResolutionSchedule::normalized() const {
  ResolutionSchedule out;
  for (const Stage& stage : stages) {
    if (!out.stages.empty() && out.stages.back().size == stage.size) out.stages.back().epochs += stage.epochs;
    else out.stages.push_back(stage);
  }
  out.final_size = final_size;
  if (!out.stages.empty() && out.stages.back().size == final_size) out.stages.pop_back();
  if (out.stages.empty() && out.final_size == kMaxResolution) out.final_size = 0;
  return out;
}

int64_t ResolutionSchedule::counted_epochs() const {
  int64_t total = 0;
  for (const Stage& stage : stages) total += stage.epochs;
  return total;
}

std::string ResolutionSchedule::text() const {
  std::string out;
  for (const Stage& stage : stages) out += std::to_string(stage.size) + ":" + std::to_string(stage.epochs) + ",";
  return empty() ? out : out + std::to_string(final_size);
}

int ResolutionSchedule::size_at(int64_t epoch) const {
  int64_t first = 0;  // the stage's first epoch
  for (const Stage& stage : stages) {
    if (epoch < first + stage.epochs) return stage.size;
    first += stage.epochs;
  }
  return final_size;
}

}  // namespace cifar
