// The training run's TensorBoard scalars (see tensorboard.hpp).
#include "report/tensorboard.hpp"

namespace cifar {

// A fresh run may write step 0 (with --accumulate above 1 the first line
// comes before the first update); a resumed one writes from the step after
// its checkpoint's.
namespace {
// The highest step already written: none (-1) for a fresh run.
long last_written_step(long steps_done) { return steps_done == 0 ? -1 : steps_done; }
}  // namespace

TensorBoardLog::TensorBoardLog(const std::string& folder, long steps_done, bool with_test, bool drop_last_step)
    : file_(folder, {tfevents::session_start_event(tfevents::wall_time_now(),
                                                   drop_last_step ? steps_done : last_written_step(steps_done) + 1)}),
      last_step_(last_written_step(steps_done)),
      with_test_(with_test) {}

void TensorBoardLog::add_step(const StepReport& report, double learning_rate) {
  if (report.step <= last_step_) return;
  last_step_ = report.step;
  file_.write_event(
      tfevents::scalars_event(tfevents::wall_time_now(), report.step,
                              {{"train/loss", static_cast<float>(report.loss)},
                               {"train/learning_rate", static_cast<float>(learning_rate)},
                               {"train/images_per_second", static_cast<float>(report.images_per_second)}}));
}

void TensorBoardLog::add_epoch(const EpochMetrics& row) {
  std::vector<tfevents::Scalar> scalars{{"epoch/train_loss", static_cast<float>(row.train_loss)}};
  if (with_test_ && row.evaluated) {
    scalars.push_back({"epoch/test_loss", static_cast<float>(row.test_loss)});
    scalars.push_back({"epoch/test_accuracy", static_cast<float>(row.test_accuracy)});
  }
  scalars.push_back({"epoch/seconds", static_cast<float>(row.epoch_seconds)});
  scalars.push_back({"epoch/images_per_second", static_cast<float>(row.images_per_second)});
  file_.write_event(tfevents::scalars_event(tfevents::wall_time_now(), row.steps, scalars));
}

}  // namespace cifar
