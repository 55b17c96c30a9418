// The run's figures over all its segments and its closing lines. A resumed
// run carries on the totals its checkpoint holds (step/run_totals.hpp), so that
// the RESULT line, the metrics' train_eval_seconds and TIME_TO_TARGET count
// every segment; each checkpoint records them again.
#pragma once

#include <cstdint>
#include <string>

#include "report/metrics.hpp"
#include "step/run_totals.hpp"

namespace cifar {

class RunSummary {
 public:
  // `target`: --target-accuracy (0: none).
  explicit RunSummary(double target = 0) : target_(target) {}

  // A resumed run: the figures of its earlier segments.
  void carry_on(const RunTotals& resumed);
  void add_training(double seconds, int64_t images);
  void add_evaluation(double seconds) { totals_.eval_seconds += seconds; }

  // What a checkpoint records now: the run's figures plus the unfinished
  // epoch's part so far, and `accuracy`, the last evaluation's.
  RunTotals totals(double epoch_seconds, int64_t epoch_images, double accuracy) const;
  double train_eval_seconds() const { return totals_.train_seconds + totals_.eval_seconds; }

  // --target-accuracy: true the first time an evaluated `row` reaches it;
  // sets its time_to_target.
  bool reach_target(EpochMetrics& row);
  bool reached_target() const { return reached_; }
  // The resumed checkpoint recorded the target reached, as high as this run's.
  bool target_reached_before() const;

  // "RESULT train_seconds=... images_per_second=... test_accuracy=..."
  std::string result_line(double accuracy) const;
  std::string time_to_target_line(const EpochMetrics& row) const;
  // A run that ended without reaching its target (exit code 0: it is complete).
  std::string target_not_reached_line(double accuracy, int epochs, long steps) const;
  // A run resumed from its end: `checkpoint` and `where` it stands (its
  // epoch and step of the plan's); `eval`: --eval.
  std::string already_finished_line(const std::string& checkpoint, const std::string& where, bool eval) const;

 private:
  double target_;
  RunTotals totals_;  // train and eval seconds, images; the target's figures once reached
  bool reached_ = false;
};

}  // namespace cifar
