// The training program (see trainer.hpp), read top to bottom: the start-up
// walk in the constructor, then train() → train_epoch() → train_step(),
// end_epoch(), save_outputs().
#include "train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mpi/mpi_main.hpp"
#include "outputs/model_file.hpp"
#include "outputs/owner_records.hpp"
#include "process/preemption.hpp"
#include "process/startup_deadline.hpp"
#include "train/startup.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

// ---- Set-up ---------------------------------------------------------------

Trainer::Trainer(const MpiEnvironment& env, const RunConfig& config)
    : config_(config),
      world_(env.world()),
      run_(config),
      summary_(config.training.target_accuracy),
      metrics_(config.output.metrics) {
  setup_start_ = Clock::now();
  last_eval_.accuracy = -1;  // no evaluation yet
  RunSetup setup(env, config_, run_);
  end_job_on_failure(
      [&] {
        walk_startup(env.comm(), world_.node_name, setup);
        continue_resumed_run();
        open_tensorboard();
      },
      [&] { return std::string("failed during start-up, at its ") + stage_name(setup.stage()) + " stage"; },
      [this] { let_go_of_outputs(); });
}

Trainer::~Trainer() = default;

void Trainer::announce() const {
  if (world_.rank != 0) return;
  log::info(strprintf("cifar_mpi: %d rank(s) on %d node(s), backend %s, device %s", world_.size, world_.num_nodes,
                      run_.comm->name().c_str(), run_.placement.device.str().c_str()));
  log::info("threads per rank: " + describe_thread_counts(run_.threads));
  log::info("precision: " + run_.precision.text());
  if (const std::string note = trained_length_note(config_.training, run_.precision.precision); !note.empty())
    log::info(note);
  log::info(
      strprintf("data %s: %lld train / %lld test images; %ld batches of %d per rank per epoch; %zu gradient "
                "bucket(s)",
                config_.data.path.c_str(), static_cast<long long>(run_.data.train.size()),
                static_cast<long long>(run_.data.test.size()), run_.plan.batches_per_epoch, run_.plan.batch_size,
                run_.reducer->num_buckets()));
  // The file, as --config resolved it (an installed config given by name included).
  log::info(config_.config_file.empty() ? std::string("configuration:")
                                        : "configuration (file " + config_.config_file + ", command line wins):");
  for (const auto& line : config_.describe()) log::info(line);
}

// ---- The run --------------------------------------------------------------

int Trainer::train() {
  return end_job_on_failure([this] { return run(); }, [this] { return where(); }, [this] { let_go_of_outputs(); });
}

std::string Trainer::where() const {
  return strprintf("failed in epoch %d at optimiser step %ld", position_.epoch, position_.step);
}

int Trainer::run() {
  if (already_finished()) return report_already_finished();
  announce();
  if (config_.checkpoint.enabled() && preempted_during_startup(*run_.control, position_.step > 0))
    return kExitPreempted;
  end_startup();  // the last collective before the first step is behind
  // The run's outputs are this run's from its first step on.
  if (world_.rank == 0) claim_outputs(config_.output, run_.resumption.run_id, run_.resumption.run_folder);
  run_start_ = Clock::now();
  if (world_.rank == 0) {
    log::info(strprintf("start-up (data, model, communicators) %.1f s", seconds_since(setup_start_)));
    // What a benchmark charges to the run (docs/time_to_accuracy.md); process,
    // data and communicators are one-time work.
    log::info(strprintf("preparation (untrained model, whitening, optimiser) %.4f s", run_.prepare_seconds));
  }
  run_.model->train();
  while (position_.epoch < run_.plan.epochs && !run_.plan.finished(position_.step) && !summary_.reached_target()) {
    if (!train_epoch()) return kExitPreempted;  // every rank: the checkpoint is complete
    end_epoch();
  }
  report_unreached_target();
  save_outputs();
  run_.comm->barrier();
  return kExitOk;
}

// Where the run stands in its epoch, for the data path to decide the rest.
EpochShard Trainer::epoch_shard() const {
  return EpochShard(config_.data, run_.data.train.size(), world_.size, world_.rank, run_.plan.batch_size, position_);
}

bool Trainer::train_epoch() {
  epoch_ =
      EpochState{position_.epoch, Clock::now(),
                 torch::zeros({2}, torch::TensorOptions().dtype(torch::kFloat64).device(run_.placement.device)), 0};
  if (continue_resumed_epoch_ && world_.rank == 0) {  // the checkpoint's sums are over all ranks
    epoch_.loss_sum[0] = run_.resumption.epoch_loss_sum;
    epoch_.loss_sum[1] = run_.resumption.epoch_loss_count;
  }
  continue_resumed_epoch_ = false;
  run_.progress->start_epoch();
  run_.profile.start_epoch();
  const EpochShard shard = epoch_shard();
  BatchLoader loader = shard.loader(run_.data.train, run_.loader_options, run_.placement.device);
  const long batches = shard.batches();
  while (auto batch = loader.next()) {
    run_.profile.end(StepProfile::kData);
    const bool ends_step = run_.plan.ends_step(position_.batch_in_epoch, batches);
    run_.test_hooks.before_batch(position_.epoch, position_.step, position_.batch_in_epoch,
                                 run_.plan.starts_step(position_.batch_in_epoch), batch->indices);
    record_batch(train_step(*batch, ends_step), batch->labels.size(0));
    ++position_.batch_in_epoch;
    if (!ends_step) continue;
    run_.guard.require_finite(/*synchronize=*/false);  // stops every rank alike when the step was not finite
    const bool run_ends = run_.plan.finished(position_.step);
    const bool epoch_ends = run_ends || position_.batch_in_epoch >= batches;  // at_epoch_end follows
    if (run_.checkpoints->at_step_boundary(position_, epoch_.loss_sum, run_totals(), epoch_ends)) return false;
    if (run_ends) break;
  }
  return true;
}

// One batch: forward and backward; at the end of an optimiser step (every
// --accumulate batches) also the averaged gradients and the update.
torch::Tensor Trainer::train_step(const Batch& batch, bool ends_step) {
  if (run_.plan.starts_step(position_.batch_in_epoch)) {
    run_.optimizer->zero_grad();
    run_.optimizer->set_learning_rate(learning_rate(run_.schedule, position_.step),
                                      StepPoint{position_.epoch, position_.step, run_.plan.steps_per_epoch},
                                      run_.schedule.peak_lr);
  }
  if (run_.graphed && run_.graphed->fits(batch, run_.plan.batch_size)) return graphed_step(batch);
  run_.reducer->broadcast_buffers();
  run_.reducer->prepare_for_backward(ends_step, position_.step);
  const torch::Tensor loss = forward_loss(batch);
  run_.profile.end(StepProfile::kForward);
  run_.scaler.scale(loss / run_.plan.accumulate).backward();  // the resumed shape's accumulation (resumed_plan)
  run_.profile.end(StepProfile::kBackward);
  if (ends_step) apply_update();
  return loss;
}

torch::Tensor Trainer::forward_loss(const Batch& batch) {
  AutocastScope autocast(run_.precision.precision, run_.placement.device);
  const auto logits = run_.model->forward(batch.images);  // already in the model's memory format
  return torch::nn::functional::cross_entropy(
      logits.to(torch::kFloat32), batch.labels,
      torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(config_.training.label_smoothing));
}

// --cuda-graphs, a full batch: the step's device work as one graph replay
// (cuda_graph_step.hpp). Accumulation, fp16, --profile and --on-nonfinite
// skip are refused with graphs, so the work is apply_update()'s without them;
// a non-finite step still stops the run before anything is written
// (the divergence guard checks the parameters before anything is written).
torch::Tensor Trainer::graphed_step(const Batch& batch) {
  const torch::Tensor loss = run_.graphed->run(batch, [this](const Batch& static_batch) {
    run_.reducer->broadcast_buffers();
    run_.reducer->prepare_for_backward(true, position_.step);
    torch::Tensor l = forward_loss(static_batch);
    l.backward();
    run_.reducer->finish();
    run_.optimizer->step();
    return l;
  });
  finish_step();
  return loss;
}

void Trainer::apply_update() {
  run_.reducer->finish();
  run_.profile.end_comm_wait();
  // fp16: the loss scaler skips non-finite steps itself (and shrinks the scale); they are not divergence.
  if (run_.scaler.unscale_and_check(run_.parameters) &&
      run_.guard.admit(run_.reducer->gradients_finite(), position_.step))
    run_.optimizer->step();
  finish_step();
}

// The host's side of a completed optimiser step.
void Trainer::finish_step() {
  ++position_.step;
  run_.lookahead->after_step(position_.step);
  if (run_.plan.finished(position_.step)) run_.lookahead->finish();  // the run ends on the average
  run_.profile.end(StepProfile::kOptimizer);
}

// Loss sums stay on the device (no host synchronisation); the progress line
// reads the loss only when one is due. A non-finite loss (its step is
// stopped at or skipped by the divergence guard) is left out of the epoch's
// mean, so no metrics row holds NaN.
void Trainer::record_batch(const torch::Tensor& loss, int64_t batch_size) {
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor value = loss.detach().to(torch::kFloat64);
    epoch_.loss_sum[0] += torch::nan_to_num(value, 0.0, 0.0, 0.0) * batch_size;
    epoch_.loss_sum[1] += torch::isfinite(value).to(torch::kFloat64) * batch_size;
  }
  epoch_.images += batch_size;
  const auto report =
      run_.progress->after_batch(position_.epoch, position_.batch_in_epoch, position_.step, epoch_.images, loss);
  if (report && tensorboard_)
    tensorboard_->add_step(*report, learning_rate(run_.schedule, std::max(0L, position_.step - 1)));
  run_.profile.end(StepProfile::kOther);
}

void Trainer::end_epoch() {
  run_.guard.require_finite(/*synchronize=*/true);  // before the metrics row and the checkpoint
  run_.comm->all_reduce(epoch_.loss_sum, ReduceOp::Sum);
  const double seconds = seconds_since(epoch_.start);
  summary_.add_training(seconds, epoch_.images * world_.size);
  epoch_.counted = true;
  if (config_.runtime.profile) run_.profile.report(*run_.comm, epoch_.epoch, world_.num_nodes == 1);
  // A run stopped by --max-steps mid-epoch continues in this epoch.
  // The next epoch follows this world size's sampler (order_world_size 0).
  if (position_.batch_in_epoch >= epoch_shard().batches()) position_ = {position_.epoch + 1, 0, position_.step, 0};
  const bool run_ends = position_.epoch == run_.plan.epochs || run_.plan.finished(position_.step);
  EpochMetrics row = epoch_metrics(seconds, evaluate_if_due(run_ends));
  run_.guard.require_sound_epoch(config_.training,
                                 {row.epoch, row.steps, row.skipped_steps, row.train_loss, row.evaluated,
                                  row.test_loss});  // stops every rank alike before the epoch is written
  check_target(row);
  report_epoch(row);
  run_.checkpoints->at_epoch_end(position_, epoch_.loss_sum, run_totals(), run_ends || summary_.reached_target());
}

// Every --eval-every-epochs epochs and at the run's end.
bool Trainer::evaluate_if_due(bool run_ends) {
  const TrainingConfig& t = config_.training;
  if (!t.eval || (!run_ends && (epoch_.epoch + 1) % t.eval_every_epochs != 0)) return false;
  const auto start = Clock::now();
  last_eval_ = evaluate(*run_.model, run_.data.test, run_.data.normalization, *run_.comm,
                        eval_options(t, run_.precision.precision, run_.placement.device, run_.format));
  summary_.add_evaluation(seconds_since(start));
  return true;
}

void Trainer::report_epoch(const EpochMetrics& row) {
  if (world_.rank != 0) return;
  const std::string test = row.evaluated
                               ? strprintf("test loss %.4f, test accuracy %.4f, ", row.test_loss, row.test_accuracy)
                               : std::string();
  log::info(strprintf("Epoch %d done: train loss %.4f, %s%.0f img/s, %.1f s", row.epoch, row.train_loss, test.c_str(),
                      row.images_per_second, row.epoch_seconds));
  if (!config_.output.metrics.empty()) write_recorded_file(config_.output.metrics, [&] { metrics_.append(row); });
  if (tensorboard_) tensorboard_->add_epoch(row);
}

// --target-accuracy: the time is training plus evaluation since the first
// step, as the published time-to-accuracy figures count it; start-up and data
// loading are reported apart (train()).
void Trainer::check_target(EpochMetrics& row) {
  if (summary_.reach_target(row) && world_.rank == 0) log::info(summary_.time_to_target_line(row));
}

EpochMetrics Trainer::epoch_metrics(double epoch_seconds, bool evaluated) const {
  const auto loss = epoch_.loss_sum.cpu();
  EpochMetrics row;
  row.epoch = epoch_.epoch;
  row.steps = position_.step;
  // No batch with a finite loss (all skipped): no mean, written as null.
  const double counted = loss[1].item<double>();
  row.train_loss = counted > 0 ? loss[0].item<double>() / counted : std::numeric_limits<double>::quiet_NaN();
  row.evaluated = evaluated;
  row.test_loss = last_eval_.loss;
  row.test_accuracy = last_eval_.accuracy;
  row.lr = learning_rate(run_.schedule, std::max(0L, position_.step - 1));
  row.images_per_second = static_cast<double>(epoch_.images * world_.size) / std::max(epoch_seconds, 1e-9);
  row.epoch_seconds = epoch_seconds;
  row.train_eval_seconds = summary_.train_eval_seconds();
  row.world_size = world_.size;
  row.skipped_steps = run_.guard.skipped();
  return row;
}

void Trainer::save_outputs() {
  run_.guard.require_finite_state(*run_.model, position_.step);  // a diverged run writes nothing
  if (run_.guard.skipped() > 0 && world_.rank == 0)
    log::info(strprintf("%ld optimiser step(s) skipped for a non-finite gradient (--on-nonfinite skip)",
                        run_.guard.skipped()));
  if (world_.rank != 0) return;
  write_recorded_file(config_.output.model, [&] { save_state_dict(*run_.model, config_.output.model); });
  log::info(strprintf("saved %s; total wall time %s", config_.output.model.c_str(),
                      format_duration(seconds_since(run_start_)).c_str()));
  log::info(summary_.result_line(last_eval_.accuracy));
}

}  // namespace cifar
