// Progress and profile bookkeeping for the training loop: the recipe's
// progress line with throughput and ETA added, and per-phase step timing.
#pragma once

#include <array>
#include <chrono>
#include <string>

namespace cifar {

// "Epoch: 0 | Batch: 100/196 | Loss: 1.4479 | 5120 img/s | ETA 3m12s"
std::string progress_line(int epoch, long batch, long batches, double loss, double images_per_second,
                          double eta_seconds);
std::string format_duration(double seconds);  // "3m12s", "1h02m", "45s"

// Wall time of one epoch split into the phases of a step.
class StepProfile {
 public:
  enum Phase { kData = 0, kForward, kBackward, kCommWait, kOptimizer, kOther, kNumPhases };
  static const char* name(Phase p);

  void start_step() { mark_ = std::chrono::steady_clock::now(); }
  // Charges the time since the last mark to `phase`.
  void charge(Phase phase);
  const std::array<double, kNumPhases>& seconds() const { return seconds_; }
  void reset() { seconds_.fill(0.0); }

 private:
  std::chrono::steady_clock::time_point mark_;
  std::array<double, kNumPhases> seconds_{};
};

}  // namespace cifar
