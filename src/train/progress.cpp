// Progress lines and step-phase timing.
#include "train/progress.hpp"

#include <algorithm>
#include <cmath>

#include "util/log.hpp"

namespace cifar {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  if (s >= 3600) return strprintf("%ldh%02ldm", s / 3600, (s % 3600) / 60);
  if (s >= 60) return strprintf("%ldm%02lds", s / 60, s % 60);
  return strprintf("%lds", s);
}

std::string progress_line(int epoch, long batch, long batches, double loss, double images_per_second,
                          double eta_seconds) {
  return strprintf("Epoch: %d | Batch: %ld/%ld | Loss: %.4f | %.0f img/s | ETA %s", epoch, batch, batches, loss,
                   images_per_second, format_duration(eta_seconds).c_str());
}

const char* StepProfile::name(Phase p) {
  static const char* names[] = {"data wait",          "forward",   "backward", "waiting for slower ranks",
                                "comm not overlapped", "optimizer", "other"};
  return names[p];
}

void StepProfile::charge(Phase phase) {
  const auto now = std::chrono::steady_clock::now();
  seconds_[phase] += std::chrono::duration<double>(now - mark_).count();
  mark_ = now;
}

void StepProfile::charge_comm_wait() {
  wait_starts_.push_back(std::chrono::duration<double>(mark_.time_since_epoch()).count());
  const double before = seconds_[kCommWait];
  charge(kCommWait);
  waits_.push_back(seconds_[kCommWait] - before);
}

void StepProfile::reset() {
  seconds_.fill(0.0);
  wait_starts_.clear();
  waits_.clear();
}

double straggler_seconds(const std::vector<double>& starts, const std::vector<double>& waits,
                         const std::vector<double>& latest_starts) {
  double total = 0;
  for (size_t i = 0; i < starts.size() && i < waits.size() && i < latest_starts.size(); ++i) {
    total += std::clamp(latest_starts[i] - starts[i], 0.0, waits[i]);
  }
  return total;
}

}  // namespace cifar
