// JSON Lines metrics, rewritten atomically each epoch.
#include "report/metrics.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>

#include "util/atomic_file.hpp"
#include "util/log.hpp"

namespace cifar {

namespace {

// A JSON number, or null: printf's "nan" and "inf" are not JSON, and a reader
// (tools/plot_metrics, Python's json) would refuse the whole file.
std::string number(const char* format, double value) {
  return std::isfinite(value) ? strprintf(format, value) : "null";
}

// The "epoch" of a row this program wrote, or nullopt for a line it did not.
std::optional<long> row_epoch(const std::string& line) {
  static const std::regex pattern(R"(^\{"epoch": (\d{1,9}), .*\}$)");
  std::smatch m;
  if (!std::regex_match(line, m, pattern)) return std::nullopt;
  return std::stol(m[1]);
}

}  // namespace

std::optional<double> last_metric(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  std::optional<double> value;
  const std::string quoted = "\"" + key + "\": ";  // as to_json writes each key
  while (std::getline(in, line)) {
    const size_t at = line.find(quoted);
    if (at == std::string::npos) continue;
    const char* start = line.c_str() + at + quoted.size();
    char* end = nullptr;
    const double v = std::strtod(start, &end);
    if (end != start && std::isfinite(v)) value = v;  // null (not measured) is skipped
  }
  return value;
}

std::string to_json(const EpochMetrics& m) {
  // Test figures not measured this epoch (--eval-every-epochs) are null too.
  const auto measured = [&](double v) { return m.evaluated ? number("%.6f", v) : std::string("null"); };
  std::string json = strprintf(
      "{\"epoch\": %d, \"steps\": %ld, \"train_loss\": %s, \"test_loss\": %s, \"test_accuracy\": %s, \"lr\": %s, "
      "\"images_per_second\": %s, \"epoch_seconds\": %s, \"train_eval_seconds\": %s, \"world_size\": %d, "
      "\"skipped_steps\": %ld",
      m.epoch, m.steps, number("%.6f", m.train_loss).c_str(), measured(m.test_loss).c_str(),
      measured(m.test_accuracy).c_str(), number("%.8g", m.lr).c_str(), number("%.1f", m.images_per_second).c_str(),
      number("%.3f", m.epoch_seconds).c_str(), number("%.3f", m.train_eval_seconds).c_str(), m.world_size,
      m.skipped_steps);
  if (m.time_to_target >= 0) json += ", \"time_to_target\": " + number("%.3f", m.time_to_target);
  return json + "}";
}

void MetricsLog::load_existing(int first_epoch) {
  // The file is an output of an earlier run of this job; never trust it to be
  // small or a file (check_outputs refused FIFOs and devices at start-up).
  std::ifstream in(path_);
  std::string line;
  long dropped = 0;
  while (std::getline(in, line)) {
    const auto epoch = row_epoch(line);
    if (epoch && *epoch < first_epoch) {
      lines_.push_back(line);
    } else if (!epoch && !line.empty()) {
      ++dropped;
    }
  }
  if (dropped > 0)
    log::warn(strprintf("%s: dropped %ld line(s) that are not metrics rows of this program", path_.c_str(), dropped));
}

void MetricsLog::append(const EpochMetrics& row) {
  lines_.push_back(to_json(row));
  std::string text;
  for (const auto& l : lines_) text += l + "\n";
  write_file_atomically(path_, std::vector<char>(text.begin(), text.end()));
}

}  // namespace cifar
