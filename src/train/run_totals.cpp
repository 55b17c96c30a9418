// The Trainer's side of the whole run (step/run_totals.hpp,
// report/run_summary.hpp): what each checkpoint records of the run so far,
// and what follows from it at a resume: the totals carried on, a run already
// finished (by its epochs, --max-steps or its target) that trains nothing,
// the TensorBoard file that continues the curves. Members of Trainer
// (trainer.hpp), kept apart from the training loop in trainer.cpp.
#include "train/trainer.hpp"

#include "outputs/model_file.hpp"
#include "outputs/owner_records.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar {

// Where the start-up left the run: its position, and for a resumed run the
// totals its checkpoint holds and the metrics rows written so far.
void Trainer::continue_resumed_run() {
  const Resumption& r = run_.resumption;
  position_ = r.position;
  if (!r.resumed()) return;
  continue_resumed_epoch_ = true;
  summary_.carry_on(r.totals);
  if (r.totals.test_accuracy >= 0) last_eval_.accuracy = r.totals.test_accuracy;
  if (world_.rank == 0) metrics_.load_existing(position_.epoch);
}

// What a checkpoint records now: inside an epoch, its part so far too.
RunTotals Trainer::run_totals() const {
  const bool in_epoch = !epoch_.counted && epoch_.loss_sum.defined();
  return summary_.totals(in_epoch ? std::chrono::duration<double>(Clock::now() - epoch_.start).count() : 0,
                         in_epoch ? epoch_.images * world_.size : 0, last_eval_.accuracy);
}

// The resumed checkpoint is the run's end: its last epoch, --max-steps, or a
// --target-accuracy (as high as this run's) reached.
bool Trainer::already_finished() const {
  if (!run_.resumption.resumed()) return false;
  return position_.epoch >= run_.plan.epochs || run_.plan.finished(position_.step) || summary_.target_reached_before();
}

// Resumed from the end of the run: nothing to train. The model file is
// written from the checkpoint only when it is missing (a run that ended
// between its last checkpoint and its model file).
int Trainer::report_already_finished() const {
  if (world_.rank != 0) return kExitOk;
  log::info(summary_.already_finished_line(run_.resumption.path,
                                           strprintf("epoch %d of %d, step %ld of %ld", position_.epoch,
                                                     run_.plan.epochs, position_.step, run_.plan.total_steps),
                                           config_.training.eval));
  if (paths::exists(config_.output.model)) {
    log::info("left " + config_.output.model + " as it is");
  } else {
    claim_outputs(config_.output, run_.resumption.run_id, run_.resumption.run_folder);
    write_recorded_file(config_.output.model, [&] { save_state_dict(*run_.model, config_.output.model); });
    log::info("wrote the missing " + config_.output.model + " from the checkpoint");
  }
  return kExitOk;
}

// A run that ends without reaching its --target-accuracy says so; it is a
// complete run, not a failure.
void Trainer::report_unreached_target() const {
  if (world_.rank != 0 || config_.training.target_accuracy <= 0 || summary_.reached_target()) return;
  log::info(summary_.target_not_reached_line(last_eval_.accuracy, position_.epoch, position_.step));
}

// After resume(): a resumed run's events continue from its checkpoint's
// step; when that checkpoint ended a --max-steps run inside an epoch, the
// epoch's point written for its part is dropped too (the resumed run writes
// the whole epoch's). A finished run writes no file.
void Trainer::open_tensorboard() {
  if (world_.rank != 0 || config_.output.tensorboard.empty() || already_finished()) return;
  const bool drop_partial = run_.resumption.resumed() && run_.resumption.totals.partial_epoch_row;
  tensorboard_ =
      std::make_unique<TensorBoardLog>(config_.output.tensorboard, position_.step, config_.training.eval, drop_partial);
}

}  // namespace cifar
