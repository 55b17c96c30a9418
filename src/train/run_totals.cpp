// The Trainer's side of the whole-run record (outputs/owner_records.hpp):
// which files the run owns, what each checkpoint records of the run so far
// (times, images, a --target-accuracy reached), and what follows from it at a
// resume: the totals carried on, a run already finished (by its epochs,
// --max-steps or its target) that trains nothing, the TensorBoard file that
// continues the curves. Members of Trainer (trainer.hpp), kept apart from
// the training loop in trainer.cpp.
#include "train/trainer.hpp"

#include "outputs/model_file.hpp"
#include "comm/agreement.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar {

// Rank 0, before anything is written: outputs that are another run's are
// refused, naming the owner. Every rank stops alike.
void Trainer::check_output_ownership() {
  agree_on(*control_, [&] {
    if (world_.rank == 0) check_output_owners(config_, resumption_.run_id);
  });
}

// A resumed run carries on the totals its checkpoint recorded, so that the
// RESULT line, the metrics file's train_eval_seconds and TIME_TO_TARGET
// count every segment of the run.
void Trainer::adopt_resumed_totals() {
  const RunTotals& t = resumption_.totals;
  train_seconds_ = t.train_seconds;
  eval_seconds_ = t.eval_seconds;
  images_trained_ = t.images;
  if (t.test_accuracy >= 0) last_eval_.accuracy = t.test_accuracy;
  target_ = t;
}

RunTotals Trainer::run_totals() const {
  RunTotals t = target_;  // the target's figures, when it was reached
  t.train_seconds = train_seconds_;
  t.eval_seconds = eval_seconds_;
  t.images = images_trained_;
  if (!epoch_.counted && epoch_.loss_sum.defined()) {  // inside an epoch: its part so far
    t.train_seconds += std::chrono::duration<double>(Clock::now() - epoch_.start).count();
    t.images += epoch_.images * world_.size;
  }
  t.test_accuracy = last_eval_.accuracy;
  return t;
}

void Trainer::note_target_reached(const EpochMetrics& row) {
  target_.target = config_.training.target_accuracy;
  target_.target_accuracy = row.test_accuracy;
  target_.time_to_target = row.train_eval_seconds;
  target_.target_epochs = row.epoch + 1;
}

// The resumed checkpoint is the run's end: its last epoch, --max-steps, or a
// --target-accuracy (as high as this run's) reached.
bool Trainer::already_finished() const {
  if (!resumption_.resumed()) return false;
  const double target = config_.training.target_accuracy;
  const bool by_target = target > 0 && target_.reached_target() && target_.target_accuracy >= target;
  return position_.epoch >= plan_.epochs || plan_.finished(position_.step) || by_target;
}

// The run's outputs are this run's from its first step on (each record before
// its file: a file of ours always has one).
void Trainer::claim_run_outputs() const {
  if (world_.rank != 0) return;
  const std::string& id = resumption_.run_id;
  const std::string& folder = resumption_.run_folder;
  claim_output(config_.output.model, "model", id, folder);
  claim_output(config_.output.metrics, "metrics", id, folder);
  claim_output(config_.output.tensorboard, "tensorboard", id, folder);
}

// Resumed from the end of the run: nothing to train. Said plainly in one
// line with the results its checkpoint recorded, instead of a RESULT line
// for zero seconds of training (and no second TIME_TO_TARGET); the model
// file is written from the checkpoint only when it is missing (a run that
// ended between its last checkpoint and its model file).
int Trainer::report_already_finished() const {
  if (world_.rank != 0) return kExitOk;
  const double target = config_.training.target_accuracy;
  const bool by_target = target > 0 && target_.reached_target() && target_.target_accuracy >= target;
  const std::string why =
      by_target ? strprintf("--target-accuracy %g reached at epoch %d with test accuracy %.4f", target,
                            target_.target_epochs, target_.target_accuracy)
                : strprintf("epoch %d of %d, step %ld of %ld", position_.epoch, plan_.epochs, position_.step,
                            plan_.total_steps);
  std::string results;
  const RunTotals& t = resumption_.totals;
  if (t.train_seconds > 0) {
    results = strprintf(". Its results as recorded: train_seconds=%.2f images_per_second=%.1f", t.train_seconds,
                        static_cast<double>(t.images) / t.train_seconds);
    if (config_.training.eval && t.test_accuracy >= 0) results += strprintf(" test_accuracy=%.4f", t.test_accuracy);
    if (t.reached_target())
      results += strprintf("; time to target %.2f s (epochs=%d accuracy=%.4f target=%.4f)", t.time_to_target,
                           t.target_epochs, t.target_accuracy, t.target);
  }
  log::info(strprintf("the run is already finished: %s is its end (%s); nothing to train%s. To train longer, raise "
                      "--epochs or --max-steps%s; for a new run, use another --checkpoint-dir",
                      resumption_.path.c_str(), why.c_str(), results.c_str(),
                      by_target ? " and --target-accuracy" : ""));
  if (paths::exists(config_.output.model)) {
    log::info("left " + config_.output.model + " as it is");
  } else {
    claim_run_outputs();
    save_state_dict(*model_, config_.output.model);
    log::info("wrote the missing " + config_.output.model + " from the checkpoint");
  }
  return kExitOk;
}

// A run that ends (its epochs or --max-steps) without reaching its
// --target-accuracy says so. It is a complete run, not a failure: exit code
// 0, so job scripts neither restart it nor treat its outputs as broken, and
// a rerun of the same command is a no-op; the missing TIME_TO_TARGET line
// and this one tell a benchmark script it was missed.
void Trainer::report_unreached_target() const {
  const double target = config_.training.target_accuracy;
  if (world_.rank != 0 || target <= 0 || reached_target_) return;
  log::info(strprintf("TARGET_NOT_REACHED target=%.4f accuracy=%.4f epochs=%d steps=%ld: --target-accuracy %g was "
                      "not reached by the run's end; the run is complete (exit code 0). To train further, raise "
                      "--epochs (or --max-steps) and run again with --resume auto",
                      target, last_eval_.accuracy, position_.epoch, position_.step, target));
}

// After resume(): a resumed run's events continue from its checkpoint's
// step; when that checkpoint ended a --max-steps run inside an epoch, the
// epoch's point written for its part is dropped too (the resumed run writes
// the whole epoch's). A finished run writes no file.
void Trainer::open_tensorboard() {
  if (world_.rank != 0 || config_.output.tensorboard.empty() || already_finished()) return;
  const bool drop_partial = resumption_.resumed() && resumption_.totals.partial_epoch_row;
  tensorboard_ = std::make_unique<TensorBoardLog>(config_.output.tensorboard, position_.step,
                                                  config_.training.eval, drop_partial);
}

}  // namespace cifar
