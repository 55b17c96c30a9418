// JSON Lines metrics, rewritten atomically each epoch.
#include "train/metrics.hpp"

#include <fstream>

#include "train/model_io.hpp"
#include "util/atomic_file.hpp"
#include "util/log.hpp"

namespace cifar {

std::string to_json(const EpochMetrics& m) {
  const auto measured = [&](double v) { return m.evaluated ? strprintf("%.6f", v) : std::string("null"); };
  std::string json = strprintf(
      "{\"epoch\": %d, \"steps\": %ld, \"train_loss\": %.6f, \"test_loss\": %s, \"test_accuracy\": %s, "
      "\"lr\": %.8g, \"images_per_second\": %.1f, \"epoch_seconds\": %.3f, \"train_eval_seconds\": %.3f, "
      "\"world_size\": %d",
      m.epoch, m.steps, m.train_loss, measured(m.test_loss).c_str(), measured(m.test_accuracy).c_str(), m.lr,
      m.images_per_second, m.epoch_seconds, m.train_eval_seconds, m.world_size);
  if (m.time_to_target >= 0) json += strprintf(", \"time_to_target\": %.3f", m.time_to_target);
  return json + "}";
}

void MetricsLog::load_existing(int first_epoch) {
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    const auto pos = line.find("\"epoch\": ");
    if (pos == std::string::npos) continue;
    if (std::stoi(line.substr(pos + 9)) < first_epoch) lines_.push_back(line);
  }
}

void MetricsLog::append(const EpochMetrics& row) {
  lines_.push_back(to_json(row));
  std::string text;
  for (const auto& l : lines_) text += l + "\n";
  write_file_atomically(path_, std::vector<char>(text.begin(), text.end()));
}

}  // namespace cifar
