// Progress and profile bookkeeping for the training loop: the recipe's
// progress line with throughput and ETA added, and per-phase step timing.
#pragma once

#include <array>
#include <chrono>
#include <string>
#include <vector>

namespace cifar {

// "Epoch: 0 | Batch: 100/196 | Loss: 1.4479 | 5120 img/s | ETA 3m12s"
std::string progress_line(int epoch, long batch, long batches, double loss, double images_per_second,
                          double eta_seconds);
std::string format_duration(double seconds);  // "3m12s", "1h02m", "45s"

// Wall time of one epoch split into the phases of a step.
//
// The wait in GradientReducer::finish() has two causes: this rank reached it
// before the slowest rank did (load imbalance, a busy core: the all-reduce
// cannot complete before every rank has contributed), and the communication
// itself that backward did not hide. The profile records when each wait began
// so the two can be told apart once every rank's start times are known
// (straggler_seconds); charge() never charges kStragglerWait directly.
class StepProfile {
 public:
  enum Phase { kData = 0, kForward, kBackward, kStragglerWait, kCommWait, kOptimizer, kOther, kNumPhases };
  static const char* name(Phase p);

  void start_step() { mark_ = std::chrono::steady_clock::now(); }
  // Charges the time since the last mark to `phase`.
  void charge(Phase phase);
  // charge(kCommWait), remembering when the wait began and how long it took.
  void charge_comm_wait();
  const std::array<double, kNumPhases>& seconds() const { return seconds_; }
  // Per optimiser step: steady_clock seconds when the wait began, and its length.
  const std::vector<double>& wait_starts() const { return wait_starts_; }
  const std::vector<double>& waits() const { return waits_; }
  void reset();

 private:
  std::chrono::steady_clock::time_point mark_;
  std::array<double, kNumPhases> seconds_{};
  std::vector<double> wait_starts_, waits_;
};

// The part of this rank's waits spent before the last rank began waiting:
// sum over steps of min(wait, latest_start - start), at least 0, where
// latest_starts[i] is the maximum of wait_starts()[i] over all ranks. Only
// meaningful when the ranks' clocks agree (one host: steady_clock is the
// system-wide monotonic clock).
double straggler_seconds(const std::vector<double>& starts, const std::vector<double>& waits,
                         const std::vector<double>& latest_starts);

}  // namespace cifar
