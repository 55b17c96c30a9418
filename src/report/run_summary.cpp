// The run's figures and closing lines (see run_summary.hpp).
#include "report/run_summary.hpp"

#include <algorithm>

#include "util/error.hpp"

namespace cifar {

void RunSummary::carry_on(const RunTotals& resumed) { totals_ = resumed; }

void RunSummary::add_training(double seconds, int64_t images) {
  totals_.train_seconds += seconds;
  totals_.images += images;
}

RunTotals RunSummary::totals(double epoch_seconds, int64_t epoch_images, double accuracy) const {
  RunTotals t = totals_;
  t.train_seconds += epoch_seconds;
  t.images += epoch_images;
  t.test_accuracy = accuracy;
  return t;
}

bool RunSummary::reach_target(EpochMetrics& row) {
  if (target_ <= 0 || reached_ || !row.evaluated || row.test_accuracy < target_) return false;
  reached_ = true;
  row.time_to_target = row.train_eval_seconds;
  totals_.target = target_;
  totals_.target_accuracy = row.test_accuracy;
  totals_.time_to_target = row.train_eval_seconds;
  totals_.target_epochs = row.epoch + 1;
  return true;
}

bool RunSummary::target_reached_before() const {
  return target_ > 0 && totals_.reached_target() && totals_.target_accuracy >= target_;
}

std::string RunSummary::result_line(double accuracy) const {
  // A run that never evaluated (--eval false) has no accuracy to report, not 0.
  const std::string tested = accuracy >= 0 ? strprintf("%.4f", accuracy) : "none";
  return strprintf("RESULT train_seconds=%.2f images_per_second=%.1f test_accuracy=%s", totals_.train_seconds,
                   static_cast<double>(totals_.images) / std::max(totals_.train_seconds, 1e-9), tested.c_str());
}

std::string RunSummary::time_to_target_line(const EpochMetrics& row) const {
  return strprintf("TIME_TO_TARGET seconds=%.2f epochs=%d accuracy=%.4f target=%.4f", row.train_eval_seconds,
                   row.epoch + 1, row.test_accuracy, target_);
}

// The missing TIME_TO_TARGET line and this one tell a benchmark script the
// target was missed; exit code 0 keeps job scripts from restarting a
// complete run, and a rerun of the same command is a no-op.
std::string RunSummary::target_not_reached_line(double accuracy, int epochs, long steps) const {
  return strprintf(
      "TARGET_NOT_REACHED target=%.4f accuracy=%.4f epochs=%d steps=%ld: --target-accuracy %g was not "
      "reached by the run's end; the run is complete (exit code 0). To train further, raise --epochs "
      "(or --max-steps) and run again with --resume auto",
      target_, accuracy, epochs, steps, target_);
}

// Said plainly in one line with the results its checkpoint recorded, instead
// of a RESULT line for zero seconds of training.
std::string RunSummary::already_finished_line(const std::string& checkpoint, const std::string& where,
                                              bool eval) const {
  const bool by_target = target_reached_before();
  const RunTotals& t = totals_;
  const std::string why = by_target ? strprintf("--target-accuracy %g reached at epoch %d with test accuracy %.4f",
                                                target_, t.target_epochs, t.target_accuracy)
                                    : where;
  std::string results;
  if (t.train_seconds > 0) {
    results = strprintf(". Its results as recorded: train_seconds=%.2f images_per_second=%.1f", t.train_seconds,
                        static_cast<double>(t.images) / t.train_seconds);
    if (eval && t.test_accuracy >= 0) results += strprintf(" test_accuracy=%.4f", t.test_accuracy);
    if (t.reached_target())
      results += strprintf("; time to target %.2f s (epochs=%d accuracy=%.4f target=%.4f)", t.time_to_target,
                           t.target_epochs, t.target_accuracy, t.target);
  }
  return strprintf(
      "the run is already finished: %s is its end (%s); nothing to train%s. To train longer, raise "
      "--epochs or --max-steps%s; for a new run, use another --checkpoint-dir",
      checkpoint.c_str(), why.c_str(), results.c_str(), by_target ? " and --target-accuracy" : "");
}

}  // namespace cifar
