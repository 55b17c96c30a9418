// Per-epoch metrics of a run as JSON Lines (one object per epoch), the input
// of tools/plot_metrics. Rank 0 owns the file; it is rewritten atomically
// after every epoch, so a reader (or a crash) never sees half a line.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cifar {

struct EpochMetrics {
  int epoch = 0;
  long steps = 0;         // optimiser steps so far
  double train_loss = 0;  // mean over the epoch's samples, all ranks
  bool evaluated = true;  // test_loss and test_accuracy were measured this epoch (else null in the file)
  double test_loss = 0;
  double test_accuracy = 0;
  double lr = 0;                 // at the end of the epoch
  double images_per_second = 0;  // training images, all ranks
  double epoch_seconds = 0;
  double train_eval_seconds = 0;  // training and evaluation since the run's first step
  double time_to_target = -1;     // train_eval_seconds when --target-accuracy was reached this epoch, else -1
  int world_size = 1;
  long skipped_steps = 0;  // optimiser steps skipped so far (--on-nonfinite skip)
};

class MetricsLog {
 public:
  explicit MetricsLog(std::string path) : path_(std::move(path)) {}
  // Keeps the rows of epochs before `first_epoch` from an existing file (resume).
  void load_existing(int first_epoch);
  void append(const EpochMetrics& row);  // and rewrites the file
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::string> lines_;
};

// One JSON object; a value that is not finite is written as null.
std::string to_json(const EpochMetrics& m);

// The last finite value of `key` ("train_loss", "test_accuracy") in a
// metrics file that to_json's rows make up; nullopt when no row has one.
std::optional<double> last_metric(const std::string& path, const std::string& key);

}  // namespace cifar
