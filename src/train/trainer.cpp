// The training program (see trainer.hpp), read top to bottom: set-up in the
// constructor, then train() → train_epoch() → train_step(), end_epoch(),
// save_outputs().
#include "train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "comm/agreement.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/nccl_log.hpp"
#include "gpu/cuda_stack.hpp"
#include "model/speed94.hpp"
#include "mpi/mpi_main.hpp"
#include "optim/optimizer.hpp"
#include "outputs/model_file.hpp"
#include "outputs/owner_records.hpp"
#include "process/preemption.hpp"
#include "process/threads.hpp"
#include "train/preflight.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::chrono::milliseconds comm_timeout(const CommConfig& c) {
  return std::chrono::milliseconds(static_cast<long>(c.timeout_seconds * 1000));
}

}  // namespace

// ---- Set-up ---------------------------------------------------------------

Trainer::Trainer(const MpiEnvironment& env, const RunConfig& config)
    : config_(config),
      world_(env.world()),
      scaler_(config.training.precision == Precision::Fp16),
      guard_(config.training.on_nonfinite, true, torch::kCPU, lower_rate_advice(config.optim)),
      profile_(config.runtime.profile, torch::kCPU),
      metrics_(config.output.metrics),
      summary_(config.training.target_accuracy) {
  setup_start_ = Clock::now();
  last_eval_.accuracy = -1;  // no evaluation yet
  end_job_on_failure([&] { set_up(env); }, [this] { return where(); }, [this] { let_go_of_outputs(); });
  started_ = true;
}

void Trainer::set_up(const MpiEnvironment& env) {
  trace_ = std::make_unique<SampleTrace>(world_.rank);
  check_placement_and_outputs(env);
  threads_ = configure_process(config_.runtime, world_, placement_.device.is_cuda());  // preemption handlers: main()
  load_data(env);
  const auto prepare_start = Clock::now();
  build_model();
  prepare_seconds_ = seconds_since(prepare_start);
  agree_on_node_checks(env.comm(), world_.node_name,
                       [&] { return probe_node_resources(config_, world_, placement_, *model_, plan_); });
  build_communication(env);
  resume();
  plan_schedule();
  open_tensorboard();
}

Trainer::~Trainer() = default;

// Placement and outputs are decided before any data is read; the CUDA stack
// before the placement, which would only find no GPU on too old a driver.
// The stack (with the test-only fault injection's variable) has its own
// agreement: the placement's first step is collective, and a rank that threw
// before it would leave the others waiting there.
void Trainer::check_placement_and_outputs(const MpiEnvironment& env) {
  agree_on_startup(env.comm(), [&] {
    gpu::require_usable_cuda_stack(config_.runtime.device != DeviceRequest::Cpu);
    faults_ = FaultInjector(world_.rank);
  });
  agree_on_node_checks(env.comm(), world_.node_name, [&] { return probe_node_launch(config_, world_); });
  agree_on_startup(env.comm(), [&] {
    placement_ = place_rank(env.comm(), world_, config_.comm.backend, config_.runtime.device);
    check_device_settings(config_, placement_);
    if (world_.rank == 0) {
      outputs_.emplace(config_);
      if (const std::string note = cpu_fallback_note(config_, placement_); !note.empty()) log::info(note);
    }
  });
  profile_ = StepProfile(config_.runtime.profile, placement_.device);
  // Reading the verdict every step would synchronise a GPU; on the CPU it is free.
  guard_ = DivergenceGuard(config_.training.on_nonfinite, !placement_.device.is_cuda(), placement_.device,
                           lower_rate_advice(config_.optim));
}

// Every rank reads and validates the data; any failure stops all.
void Trainer::load_data(const MpiEnvironment& env) {
  agree_on_startup(env.comm(), [&] {
    data_ = load_dataset(config_.data, SplitRequest{true, config_.training.eval});
    plan_ = plan_for_data(config_, data_.train.info.count, world_.size);
  });
  place_dataset(data_, config_.data, placement_.device);
  progress_ = std::make_unique<ProgressReporter>(plan_, world_.size, config_.output.log_every, world_.rank == 0);
}

// The same seed on every rank gives the same initial weights; the reducer
// broadcasts rank 0's anyway and checks every rank's shapes.
void Trainer::build_model() {
  torch::manual_seed(static_cast<uint64_t>(config_.training.seed));
  model_ = make_model(config_.model.name);
  choose_head(*model_, config_.model.head);
  if (const int64_t n = std::min(model_->initialization_images(), data_.train.size()); n > 0) {
    model_->initialize_from_data(normalize_batch(data_.train.images.narrow(0, 0, n).cpu(), data_.normalization));
  }
  model_->to(placement_.device);
  if (config_.model.channels_last) {
    format_ = torch::MemoryFormat::ChannelsLast;  // weights here, batches in the loader
    set_memory_format(*model_, format_);
  }
  loader_options_ = loader_options(config_.data, placement_.device, data_.normalization,
                                   static_cast<uint64_t>(config_.training.seed), format_);
  const std::vector<ParameterGroup> groups = model_->parameter_groups();
  parameters_ = trainable_parameters(groups);
  optimizer_ = std::make_unique<Optimizer>(built_optimizer_config(config_), groups);
  const LookaheadOptions lookahead{config_.optim.lookahead_every, config_.optim.lookahead_decay,
                                   config_.optim.lookahead_last_steps};
  lookahead_ = std::make_unique<Lookahead>(*model_, lookahead, plan_.total_steps);
}

void Trainer::build_communication(const MpiEnvironment& env) {
  control_ = std::make_unique<MpiCommunicator>(env.comm(), comm_timeout(config_.comm));
  // Multi-node NCCL: the network NCCL chose, from its own log of the set-up
  // (the same decision on every rank, so all reach the agreement; a rank
  // that captured nothing finds no network and passes).
  const bool check_network = placement_.backend == "nccl" && world_.num_nodes > 1;
  NcclLogCapture nccl_log(check_network);
  comm_ = make_communicator(env.comm(), placement_, comm_timeout(config_.comm));
  if (check_network) {
    const std::string network = nccl_network_from_log(nccl_log.finish());
    agree_on_node_checks(env.comm(), world_.node_name, [&] {
      return check_nccl_network(world_.node_name, network, config_.comm.allow_socket_network);
    });
  }
  const BucketOptions buckets{static_cast<size_t>(config_.comm.first_bucket_mb * (1 << 20)),
                              static_cast<size_t>(config_.comm.bucket_mb * (1 << 20))};
  reducer_ = std::make_unique<GradientReducer>(parameters_, untrained_state(*model_), *comm_, buckets);
  optimizer_->distribute(*comm_);
  const TrainState state{*model_,          optimizer_->torch_optimizer(), scaler_, placement_.device, lookahead_.get(),
                         &guard_.skipped() /* a live count */};
  if (config_.runtime.cuda_graphs) graphed_ = std::make_unique<GraphedStep>(placement_.device, *control_, *comm_);
  checkpoints_ = std::make_unique<Checkpointer>(config_, data_.train.size(), data_.identity, state, guard_, *control_);
}

// The checkpoint layer decides what the run continues (checkpointer.hpp);
// it is applied here once.
void Trainer::resume() {
  resumption_ = checkpoints_->resume(plan_);
  check_output_ownership();
  plan_ = resumption_.plan;
  position_ = resumption_.position;
  lookahead_->set_total_steps(plan_.total_steps);
  if (!resumption_.resumed()) return;
  continue_resumed_epoch_ = true;
  guard_.restore_skipped(resumption_.skipped_steps);
  adopt_resumed_totals();
  if (world_.rank == 0) metrics_.load_existing(position_.epoch);
}

// After resume(), when the plan's length is final: --lr, scaled after an
// --elastic-batch per-rank resume (exactly 1 otherwise), over the run's
// optimiser steps.
void Trainer::plan_schedule() {
  const auto tail_steps = static_cast<long>(
      std::ceil(config_.optim.lr_tail_epochs * static_cast<double>(plan_.steps_per_epoch)));  // E1: 0.375 x 32 = 12
  schedule_ = ScheduleOptions{config_.optim.schedule,
                              config_.optim.lr * resumption_.lr_scale,
                              plan_.total_steps,
                              plan_.warmup_steps,
                              std::min(tail_steps, std::max(0L, plan_.total_steps - 1)),
                              config_.optim.lr_floor};
  optimizer_->set_total_steps(schedule_.shape_steps());
}

void Trainer::announce() const {
  if (world_.rank != 0) return;
  log::info(strprintf("cifar_mpi: %d rank(s) on %d node(s), backend %s, device %s", world_.size, world_.num_nodes,
                      comm_->name().c_str(), placement_.device.str().c_str()));
  log::info("threads per rank: " + describe_thread_counts(threads_));
  log::info(strprintf(
      "data %s: %lld train / %lld test images; %ld batches of %d per rank per epoch; %zu gradient "
      "bucket(s)",
      config_.data.path.c_str(), static_cast<long long>(data_.train.size()), static_cast<long long>(data_.test.size()),
      plan_.batches_per_epoch, plan_.batch_size, reducer_->num_buckets()));
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
  if (!started_) return "failed during start-up";
  return strprintf("failed in epoch %d at optimiser step %ld", position_.epoch, position_.step);
}

int Trainer::run() {
  if (already_finished()) return report_already_finished();
  announce();
  if (config_.checkpoint.enabled() && preempted_during_startup(*control_, position_.step > 0)) return kExitPreempted;
  // The run's outputs are this run's from its first step on.
  if (world_.rank == 0) claim_outputs(config_.output, resumption_.run_id, resumption_.run_folder);
  run_start_ = Clock::now();
  if (world_.rank == 0) {
    log::info(strprintf("start-up (data, model, communicators) %.1f s", seconds_since(setup_start_)));
    // What a benchmark charges to the run (docs/time_to_accuracy.md); process,
    // data and communicators are one-time work.
    log::info(strprintf("preparation (untrained model, whitening, optimiser) %.4f s", prepare_seconds_));
  }
  model_->train();
  while (position_.epoch < plan_.epochs && !plan_.finished(position_.step) && !summary_.reached_target()) {
    if (!train_epoch()) return kExitPreempted;  // every rank: the checkpoint is complete
    end_epoch();
  }
  report_unreached_target();
  save_outputs();
  comm_->barrier();
  return kExitOk;
}

// Where the run stands in its epoch, for the data path to decide the rest.
EpochShard Trainer::epoch_shard() const {
  return EpochShard(config_.data, data_.train.size(), world_.size, world_.rank, plan_.batch_size, position_);
}

bool Trainer::train_epoch() {
  epoch_ = EpochState{position_.epoch, Clock::now(),
                      torch::zeros({2}, torch::TensorOptions().dtype(torch::kFloat64).device(placement_.device)), 0};
  if (continue_resumed_epoch_ && world_.rank == 0) {  // the checkpoint's sums are over all ranks
    epoch_.loss_sum[0] = resumption_.epoch_loss_sum;
    epoch_.loss_sum[1] = resumption_.epoch_loss_count;
  }
  continue_resumed_epoch_ = false;
  progress_->start_epoch();
  profile_.start_epoch();
  const EpochShard shard = epoch_shard();
  BatchLoader loader = shard.loader(data_.train, loader_options_, placement_.device);
  const long batches = shard.batches();
  while (auto batch = loader.next()) {
    profile_.end(StepProfile::kData);
    const bool ends_step = plan_.ends_step(position_.batch_in_epoch, batches);
    trace_->record(position_.epoch, position_.step, position_.batch_in_epoch, batch->indices);
    record_batch(train_step(*batch, ends_step), batch->labels.size(0));
    ++position_.batch_in_epoch;
    if (!ends_step) continue;
    guard_.require_finite(/*synchronize=*/false);  // stops every rank alike when the step was not finite
    const bool run_ends = plan_.finished(position_.step);
    const bool epoch_ends = run_ends || position_.batch_in_epoch >= batches;  // at_epoch_end follows
    if (checkpoints_->at_step_boundary(position_, epoch_.loss_sum, run_totals(), epoch_ends)) return false;
    if (run_ends) break;
  }
  return true;
}

// One batch: forward and backward; at the end of an optimiser step (every
// --accumulate batches) also the averaged gradients and the update.
torch::Tensor Trainer::train_step(const Batch& batch, bool ends_step) {
  if (plan_.starts_step(position_.batch_in_epoch)) {
    faults_.at_step(position_.step);
    optimizer_->zero_grad();
    optimizer_->set_learning_rate(learning_rate(schedule_, position_.step),
                                  StepPoint{position_.epoch, position_.step, plan_.steps_per_epoch}, schedule_.peak_lr);
  }
  if (graphed_ && graphed_->fits(batch, plan_.batch_size)) return graphed_step(batch);
  reducer_->broadcast_buffers();
  reducer_->prepare_for_backward(ends_step, position_.step);
  const torch::Tensor loss = forward_loss(batch);
  profile_.end(StepProfile::kForward);
  scaler_.scale(loss / plan_.accumulate).backward();  // the resumed shape's accumulation (resumed_plan)
  profile_.end(StepProfile::kBackward);
  if (ends_step) apply_update();
  return loss;
}

torch::Tensor Trainer::forward_loss(const Batch& batch) {
  AutocastScope autocast(config_.training.precision, placement_.device);
  const auto logits = model_->forward(batch.images);  // already in the model's memory format
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
  const torch::Tensor loss = graphed_->run(batch, [this](const Batch& static_batch) {
    reducer_->broadcast_buffers();
    reducer_->prepare_for_backward(true, position_.step);
    torch::Tensor l = forward_loss(static_batch);
    l.backward();
    reducer_->finish();
    optimizer_->step();
    return l;
  });
  finish_step();
  return loss;
}

void Trainer::apply_update() {
  reducer_->finish();
  profile_.end_comm_wait();
  // fp16: the loss scaler skips non-finite steps itself (and shrinks the scale); they are not divergence.
  if (scaler_.unscale_and_check(parameters_) && guard_.admit(reducer_->gradients_finite(), position_.step))
    optimizer_->step();
  finish_step();
}

// The host's side of a completed optimiser step.
void Trainer::finish_step() {
  ++position_.step;
  lookahead_->after_step(position_.step);
  if (plan_.finished(position_.step)) lookahead_->finish();  // the run ends on the average
  profile_.end(StepProfile::kOptimizer);
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
      progress_->after_batch(position_.epoch, position_.batch_in_epoch, position_.step, epoch_.images, loss);
  if (report && tensorboard_)
    tensorboard_->add_step(*report, learning_rate(schedule_, std::max(0L, position_.step - 1)));
  profile_.end(StepProfile::kOther);
}

void Trainer::end_epoch() {
  guard_.require_finite(/*synchronize=*/true);  // before the metrics row and the checkpoint
  comm_->all_reduce(epoch_.loss_sum, ReduceOp::Sum);
  const double seconds = seconds_since(epoch_.start);
  summary_.add_training(seconds, epoch_.images * world_.size);
  epoch_.counted = true;
  if (config_.runtime.profile) profile_.report(*comm_, epoch_.epoch, world_.num_nodes == 1);
  // A run stopped by --max-steps mid-epoch continues in this epoch.
  // The next epoch follows this world size's sampler (order_world_size 0).
  if (position_.batch_in_epoch >= epoch_shard().batches()) position_ = {position_.epoch + 1, 0, position_.step, 0};
  const bool run_ends = position_.epoch == plan_.epochs || plan_.finished(position_.step);
  EpochMetrics row = epoch_metrics(seconds, evaluate_if_due(run_ends));
  guard_.require_sound_epoch(config_.training, {row.epoch, row.steps, row.skipped_steps, row.train_loss, row.evaluated,
                                                row.test_loss});  // stops every rank alike before the epoch is written
  check_target(row);
  report_epoch(row);
  checkpoints_->at_epoch_end(position_, epoch_.loss_sum, run_totals(), run_ends || summary_.reached_target());
}

// Every --eval-every-epochs epochs and at the run's end.
bool Trainer::evaluate_if_due(bool run_ends) {
  const TrainingConfig& t = config_.training;
  if (!t.eval || (!run_ends && (epoch_.epoch + 1) % t.eval_every_epochs != 0)) return false;
  const auto start = Clock::now();
  last_eval_ = evaluate(*model_, data_.test, data_.normalization, *comm_, eval_options(t, placement_.device, format_));
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
  row.lr = learning_rate(schedule_, std::max(0L, position_.step - 1));
  row.images_per_second = static_cast<double>(epoch_.images * world_.size) / std::max(epoch_seconds, 1e-9);
  row.epoch_seconds = epoch_seconds;
  row.train_eval_seconds = summary_.train_eval_seconds();
  row.world_size = world_.size;
  row.skipped_steps = guard_.skipped();
  return row;
}

void Trainer::save_outputs() {
  guard_.require_finite_state(*model_, position_.step);  // a diverged run writes nothing
  if (guard_.skipped() > 0 && world_.rank == 0)
    log::info(
        strprintf("%ld optimiser step(s) skipped for a non-finite gradient (--on-nonfinite skip)", guard_.skipped()));
  if (world_.rank != 0) return;
  write_recorded_file(config_.output.model, [&] { save_state_dict(*model_, config_.output.model); });
  log::info(strprintf("saved %s; total wall time %s", config_.output.model.c_str(),
                      format_duration(seconds_since(run_start_)).c_str()));
  log::info(summary_.result_line(last_eval_.accuracy));
}

}  // namespace cifar
