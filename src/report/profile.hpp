// --profile: where the time of a step goes, per epoch, summed over ranks.
//
// The wait in GradientReducer::finish() has two causes: this rank reached it
// before the slowest rank did (load imbalance, a busy core: the all-reduce
// cannot complete before every rank has contributed), and the communication
// itself that backward did not hide. The profile records when each wait began
// so the two can be told apart once every rank's start times are known
// (straggler_seconds); end() never charges kStragglerWait directly. On a GPU
// each phase ends by waiting for the compute stream, never for NCCL's: an
// all-reduce still running behind backward is overlap, not a phase.
#pragma once

#include <torch/types.h>

#include <array>
#include <chrono>
#include <vector>

#include "comm/communicator.hpp"

namespace cifar {

class StepProfile {
 public:
  enum Phase { kData = 0, kForward, kBackward, kStragglerWait, kCommWait, kOptimizer, kOther, kNumPhases };
  static const char* name(Phase p);

  // Disabled, every call is free. Enabled on a GPU, each end() first waits
  // for the device, so that a phase is charged its own GPU time.
  StepProfile(bool enabled, torch::Device device) : enabled_(enabled), device_(device) {}

  void start_epoch();  // clears the sums and starts timing
  // Charges the time since the last mark to `phase`.
  void end(Phase phase);
  // end(kCommWait), remembering when the wait began and how long it took.
  void end_comm_wait();
  // Collective: logs this epoch's shares on rank 0. On one host the gradient
  // wait is split into waiting for slower ranks and communication that
  // backward did not hide; across hosts the clocks are not comparable, so the
  // wait is reported whole.
  void report(Communicator& comm, int epoch, bool one_host) const;

  const std::array<double, kNumPhases>& seconds() const { return seconds_; }
  // Per optimiser step: steady_clock seconds when the wait began, and its length.
  const std::vector<double>& wait_starts() const { return wait_starts_; }
  const std::vector<double>& waits() const { return waits_; }

 private:
  void mark(Phase phase);
  double straggling_seconds(Communicator& comm) const;  // collective

  bool enabled_;
  torch::Device device_;
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
