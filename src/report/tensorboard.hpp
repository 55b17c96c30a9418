// --tensorboard DIR: the run's curves as TensorBoard event files, written by
// rank 0 at the two points where the run reports anyway:
//
//   each progress line (every --log-every batches), at step = optimiser steps done:
//     train/loss               the batch's loss (rank 0's, as the line prints)
//     train/learning_rate      the rate that batch was trained with
//     train/images_per_second  as the line prints
//   each epoch's end, at step = the metrics file's "steps":
//     epoch/train_loss, epoch/test_loss, epoch/test_accuracy (with --eval),
//     epoch/seconds, epoch/images_per_second
//
// Every run writes a new file in DIR (tfevents::EventFileWriter) and
// TensorBoard merges a folder's files into one run. A file begins with a
// SessionLog START at the first step it can write, one past the steps
// already done: a resumed run's tells the reader to drop whatever the
// interrupted run wrote after its checkpoint (the resumed run writes those
// steps again), so the curves continue without duplicates (and, after a
// --max-steps end inside an epoch, without that epoch's partial point, whose
// step the START then includes); a fresh run's
// (step 0) replaces an earlier run's curves in the same folder, as
// TensorFlow's own restarts do.
#pragma once

#include <string>

#include "report/metrics.hpp"
#include "report/progress.hpp"
#include "util/event_file.hpp"

namespace cifar {

class TensorBoardLog {
 public:
  // `steps_done`: optimiser steps already done (the checkpoint's, 0 for a
  // fresh run); `with_test`: the run evaluates, so the test scalars mean
  // something; `drop_last_step`: the START is at `steps_done` itself, so the
  // reader also drops what the interrupted run wrote at that step (the
  // point of an epoch it ended early, at --max-steps, which the resumed run
  // writes again for the whole epoch). Throws cifar::Error when the file
  // cannot be created.
  TensorBoardLog(const std::string& folder, long steps_done, bool with_test, bool drop_last_step = false);

  // A progress line's numbers and the learning rate its batch used. Lines
  // that fall inside an optimiser step already written (--accumulate more
  // than --log-every) add nothing: a step has one value per tag.
  void add_step(const StepReport& report, double learning_rate);
  void add_epoch(const EpochMetrics& row);
  const std::string& path() const { return file_.path(); }

 private:
  tfevents::EventFileWriter file_;
  long last_step_;  // the highest step written, or the steps done before this run
  bool with_test_;
};

}  // namespace cifar
