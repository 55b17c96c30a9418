// Progress for the user: the PyTorch DDP recipe's progress line with throughput and ETA
// added, printed by rank 0 every --log-every batches.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <optional>
#include <string>

#include "step/run_plan.hpp"

namespace cifar {

// "Epoch: 0 | Batch: 100/196 | Loss: 1.4479 | 5120 img/s | ETA 3m12s"
std::string progress_line(int epoch, long batch, long batches, double loss, double images_per_second,
                          double eta_seconds);
std::string format_duration(double seconds);  // "3m12s", "1h02m", "45s"

// What a progress line says, for the other consumers of the same moments
// (the TensorBoard log).
struct StepReport {
  int epoch = 0;
  long batch = 0;                // 0-based, in the epoch
  long step = 0;                 // optimiser steps done
  double loss = 0;               // of this batch, on this rank
  double images_per_second = 0;  // all ranks, since the epoch (or its resumed part) started
  double eta_seconds = 0;
};

class ProgressReporter {
 public:
  // `printing`: this rank prints (rank 0); the others only count.
  ProgressReporter(const RunPlan& plan, int world_size, int log_every, bool printing)
      : plan_(plan), world_size_(world_size), log_every_(log_every), printing_(printing) {}

  void start_epoch() { epoch_start_ = std::chrono::steady_clock::now(); }
  // After batch `batch` (0-based) of `epoch`, with `epoch_images` images
  // trained by this rank so far in the epoch and `steps_done` optimiser
  // steps. Reads `loss` (which may live on a GPU) only when a line is due,
  // and returns the line's numbers then (on the printing rank only).
  std::optional<StepReport> after_batch(int epoch, long batch, long steps_done, int64_t epoch_images,
                                        const torch::Tensor& loss) const;

 private:
  const RunPlan& plan_;
  int world_size_;
  int log_every_;
  bool printing_;
  std::chrono::steady_clock::time_point epoch_start_;
};

}  // namespace cifar
