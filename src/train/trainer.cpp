// The training loop, read top to bottom as a recipe:
//   place the rank → load and check the data → build the model → wrap its
//   gradients in a GradientReducer → for each epoch: shard, load batches,
//   forward, backward (buckets all-reduce as gradients appear), step →
//   evaluate on the sharded test split → write metrics → save the model.
#include "train/trainer.hpp"

#include <unistd.h>

#include "comm/factory.hpp"
#include "data/batch_loader.hpp"
#include "data/distributed_sampler.hpp"
#include "data/hdf5_dataset.hpp"
#include "dist/agreement.hpp"
#include "dist/device.hpp"
#include "model/model.hpp"
#include "train/checkpoint.hpp"
#include "train/gradient_reducer.hpp"
#include "train/metrics.hpp"
#include "train/model_io.hpp"
#include "train/precision.hpp"
#include "train/preemption.hpp"
#include "train/progress.hpp"
#include "train/schedule.hpp"
#include "train/threads.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/memory.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// An output file's folder must exist (it is created) and be writable before
// any training time is spent.
void check_writable(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  const std::string folder = paths::parent(paths::absolute(path));
  const std::string why = paths::create_directories(folder);
  if (!why.empty() || access(folder.c_str(), W_OK) != 0) {
    throw ConfigError(strprintf("--%s %s: cannot write to folder %s (%s); choose a writable path", option.c_str(),
                                path.c_str(), folder.c_str(), why.empty() ? "permission denied" : why.c_str()));
  }
}

struct Datasets {
  Split train;
  Split test;
  Normalization normalization;
};

Datasets load_datasets(const TrainConfig& c, const World& w) {
  Datasets d;
  d.train = read_split(c.data, "train");
  if (c.eval) d.test = read_split(c.data, "test");
  if (d.train.size() < w.size) {
    throw ConfigError(strprintf("%s has %lld training samples but the job has %d ranks: every rank needs at least "
                                "one sample; use fewer ranks",
                                c.data.c_str(), static_cast<long long>(d.train.size()), w.size));
  }
  d.normalization = c.normalize == "dataset" ? Normalization::from_split(d.train.info) : Normalization::recipe();
  return d;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainConfig& c, const std::vector<torch::Tensor>& params) {
  if (c.optimizer == "sgd") {
    return std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(c.lr).momentum(c.momentum).nesterov(c.nesterov).weight_decay(c.weight_decay));
  }
  return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(c.lr).weight_decay(c.weight_decay));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

struct Evaluation {
  double loss = 0;
  double accuracy = 0;
};

// Each rank scores its stride of the test split (no padding, so no sample
// counts twice); correct counts and loss sums are all-reduced.
Evaluation evaluate(Model& model, const Split& test, const Normalization& norm, Communicator& comm,
                    torch::Device device, torch::MemoryFormat format) {
  torch::NoGradGuard no_grad;
  model.eval();
  std::vector<int64_t> shard;
  for (int64_t i = comm.rank(); i < test.size(); i += comm.size()) shard.push_back(i);
  LoaderOptions opts;
  opts.normalization = norm;
  opts.prefetch_depth = 1;
  opts.memory_format = format;
  BatchLoader loader(test, shard, 1000, opts, device);
  auto totals = torch::zeros({3}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  while (auto batch = loader.next()) {
    auto logits = model.forward(batch->images).to(torch::kFloat32);
    totals[0] += torch::nn::functional::cross_entropy(
        logits, batch->labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    totals[1] += (logits.argmax(1) == batch->labels).sum();
    totals[2] += batch->labels.size(0);
  }
  comm.all_reduce(totals, ReduceOp::Sum);
  const auto t = totals.cpu();
  const double n = std::max(1.0, t[2].item<double>());
  model.train();
  return {t[0].item<double>() / n, t[1].item<double>() / n};
}

// This rank's gradient waits that were spent waiting for slower ranks: needs
// every rank's wait start times, so it is collective (all ranks call it).
double straggling_seconds(const StepProfile& profile, Communicator& comm, torch::Device device) {
  const auto& starts = profile.wait_starts();
  const auto counts = comm.all_gather(torch::tensor({static_cast<int64_t>(starts.size())}).to(device)).cpu();
  if (starts.empty() || !(counts == counts[0]).all().item<bool>()) return 0.0;  // same answer on every rank
  const auto all = comm.all_gather(torch::tensor(starts, torch::TensorOptions().dtype(torch::kFloat64)).to(device));
  const auto latest = std::get<0>(all.cpu().max(0)).contiguous();
  const double* p = latest.data_ptr<double>();
  return straggler_seconds(starts, profile.waits(), std::vector<double>(p, p + latest.numel()));
}

// Per-epoch shares of the step phases, summed over ranks. On one host the
// gradient wait is split into waiting for slower ranks and communication that
// backward did not hide; across hosts the clocks are not comparable, so the
// wait is reported whole.
void print_profile(const StepProfile& profile, Communicator& comm, torch::Device device, int epoch, bool one_host) {
  std::vector<double> mine(profile.seconds().begin(), profile.seconds().end());
  if (one_host) {
    const double straggling = straggling_seconds(profile, comm, device);
    mine[StepProfile::kStragglerWait] += straggling;
    mine[StepProfile::kCommWait] -= straggling;
  }
  auto secs = torch::tensor(mine, torch::TensorOptions().dtype(torch::kFloat64)).to(device);
  comm.all_reduce(secs, ReduceOp::Sum);
  secs = secs.cpu();
  const double total = std::max(1e-9, secs.sum().item<double>());
  std::string line = strprintf("Profile epoch %d (sum over %d ranks, %.1f s):", epoch, comm.size(), total);
  for (int p = 0; p < StepProfile::kNumPhases; ++p) {
    const auto phase = static_cast<StepProfile::Phase>(p);
    if (!one_host && phase == StepProfile::kStragglerWait) continue;
    const char* name = !one_host && phase == StepProfile::kCommWait ? "comm wait (incl. slower ranks)"
                                                                     : StepProfile::name(phase);
    line += strprintf("%s %s %.1f%%", p == 0 ? "" : ",", name, 100.0 * secs[p].item<double>() / total);
  }
  log::info(line);
}

}  // namespace

int run_training(const MpiEnvironment& env, const TrainConfig& c) {
  const World& world = env.world();

  // 1. Placement, threads and outputs: all decided before any data is read.
  Placement placement;
  Precision precision = Precision::Fp32;
  agree_on_startup(env.comm(), [&] {
    placement = place_rank(world, parse_backend(c.backend), parse_device(c.device));
    precision = parse_precision(c.precision);
    if (precision != Precision::Fp32 && !placement.device.is_cuda()) {
      throw ConfigError("--precision " + c.precision + " needs a GPU (--device cuda); CPUs train in fp32");
    }
    make_model(c.model);  // validates the name
    if (world.rank == 0) {
      check_writable("output", c.output);
      check_writable("metrics", c.metrics);
    }
  });
  const torch::Device device = placement.device;
  const int threads = c.threads > 0 ? c.threads : automatic_thread_count(world);
  const int blas_threads = blas_thread_count(c.blas_threads, threads);
  apply_thread_count(threads, blas_threads);
  if (c.retain_memory) retain_freed_memory();
  if (device.is_cuda()) {
    // Autotuning picks the fastest kernels, which may differ from run to run
    // and sum in a different order; --deterministic trades it for repeatability.
    at::globalContext().setBenchmarkCuDNN(!c.deterministic);
    at::globalContext().setDeterministicCuDNN(c.deterministic);
  }
  if (!c.checkpoint_dir.empty()) install_preemption_handlers();  // before any long start-up work

  // 2. Data: every rank reads and validates the file; any failure stops all.
  Datasets data;
  agree_on_startup(env.comm(), [&] { data = load_datasets(c, world); });
  if (device.is_cuda() && c.data_on_device) {
    // ~150 MB of uint8 for CIFAR-10: batches are then built on the GPU.
    data.train.images = data.train.images.to(device);
    if (data.test.size() > 0) data.test.images = data.test.images.to(device);
  }

  // 3. Model, communicator, reducer, optimiser.
  torch::manual_seed(static_cast<uint64_t>(c.seed));
  std::shared_ptr<Model> model = make_model(c.model);
  model->to(device);
  // Weights and batches (made by the loader) in one layout.
  const auto format = c.channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
  if (c.channels_last) set_memory_format(*model, format);
  auto comm = make_communicator(env.comm(), placement,
                                std::chrono::milliseconds(static_cast<long>(c.comm_timeout * 1000)));
  const auto params = model->parameters();
  GradientReducer reducer(params, model->buffers(), *comm,
                          BucketOptions{static_cast<size_t>(c.first_bucket_mb * (1 << 20)),
                                        static_cast<size_t>(c.bucket_mb * (1 << 20))});
  auto optimizer = make_optimizer(c, params);
  LossScaler scaler(precision == Precision::Fp16);
  Checkpointer checkpoints(c, env.comm(), world, *comm, device, data.train.size(), *model, *optimizer, scaler);
  const std::optional<Checkpoint> resumed = checkpoints.resume();
  const TrainingPosition start = resumed ? resumed->position : TrainingPosition{};

  const int64_t per_rank = samples_per_rank(data.train.size(), world.size, c.drop_last);
  const long batches_per_epoch = static_cast<long>(
      c.drop_last ? per_rank / c.batch_size : (per_rank + c.batch_size - 1) / c.batch_size);
  const long steps_per_epoch = (batches_per_epoch + c.accumulate - 1) / c.accumulate;
  long total_steps = steps_per_epoch * c.epochs;
  if (c.max_steps > 0) total_steps = std::min(total_steps, c.max_steps);
  ScheduleOptions schedule{c.schedule, c.lr, total_steps,
                           static_cast<long>(c.warmup_epochs * static_cast<double>(steps_per_epoch))};

  if (world.rank == 0) {
    log::info(strprintf("cifar_mpi: %d rank(s) on %d node(s), backend %s, device %s, %d thread(s) per rank (BLAS %d)",
                        world.size, world.num_nodes, comm->name().c_str(), device.str().c_str(), threads,
                        blas_threads));
    log::info(strprintf("data %s: %lld train / %lld test images; %ld batches of %d per rank per epoch; %zu gradient "
                        "bucket(s)",
                        c.data.c_str(), static_cast<long long>(data.train.size()),
                        static_cast<long long>(data.test.size()), batches_per_epoch, c.batch_size,
                        reducer.num_buckets()));
    log::info("configuration:");
    for (const auto& line : c.describe()) log::info(line);
  }

  // 4. Epochs.
  MetricsLog metrics(c.metrics);
  if (resumed && world.rank == 0) metrics.load_existing(start.epoch);
  StepProfile profile;
  long step = start.step;
  int preempted_by = 0;
  double train_seconds = 0;
  int64_t images_trained = 0;
  Evaluation last_eval;
  const auto run_start = Clock::now();
  model->train();
  for (int epoch = start.epoch; epoch < c.epochs && (c.max_steps == 0 || step < c.max_steps); ++epoch) {
    const auto epoch_start = Clock::now();
    SamplerOptions sampler{data.train.size(), world.size, world.rank, static_cast<uint64_t>(c.shuffle_seed),
                           epoch, c.shuffle, c.drop_last};
    LoaderOptions lopts;
    lopts.normalization = data.normalization;
    lopts.augment = c.augment;
    lopts.seed = static_cast<uint64_t>(c.seed);
    lopts.rank = world.rank;
    lopts.epoch = epoch;
    lopts.drop_last = c.drop_last;
    lopts.prefetch_depth = c.loader_threads > 0 ? 2 : 0;
    lopts.memory_format = format;
    lopts.start_batch = epoch == start.epoch ? start.batch_in_epoch : 0;
    BatchLoader loader(data.train, distributed_sampler_indices(sampler), c.batch_size, lopts, device);

    auto loss_sum = torch::zeros({2}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
    if (resumed && epoch == start.epoch && world.rank == 0) {  // the checkpoint's sums are over all ranks
      loss_sum[0] = resumed->epoch_loss_sum;
      loss_sum[1] = resumed->epoch_loss_count;
    }
    int64_t epoch_images = 0;
    profile.reset();
    profile.start_step();
    long batch_index = lopts.start_batch;
    while (auto batch = loader.next()) {
      const int micro = static_cast<int>(batch_index % c.accumulate);
      const bool last_micro = micro == c.accumulate - 1 || batch_index + 1 == batches_per_epoch;
      if (micro == 0) {
        optimizer->zero_grad();
        set_learning_rate(*optimizer, learning_rate(schedule, step));
      }
      const auto& x = batch->images;  // already in the model's memory format (lopts.memory_format)
      profile.charge(StepProfile::kData);

      reducer.broadcast_buffers();
      reducer.prepare_for_backward(last_micro, step);
      torch::Tensor loss;
      {
        AutocastScope autocast(precision);
        auto logits = model->forward(x);
        loss = torch::nn::functional::cross_entropy(
            logits.to(torch::kFloat32), batch->labels,
            torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(c.label_smoothing));
      }
      if (c.profile && device.is_cuda()) torch::cuda::synchronize();
      profile.charge(StepProfile::kForward);
      scaler.scale(loss / c.accumulate).backward();
      if (c.profile && device.is_cuda()) torch::cuda::synchronize();
      profile.charge(StepProfile::kBackward);

      if (last_micro) {
        reducer.finish();
        if (c.profile && device.is_cuda()) torch::cuda::synchronize();
        profile.charge_comm_wait();
        if (scaler.unscale_and_check(params)) optimizer->step();
        ++step;
        if (c.profile && device.is_cuda()) torch::cuda::synchronize();
        profile.charge(StepProfile::kOptimizer);
      }
      const int64_t n = batch->labels.size(0);
      {
        torch::NoGradGuard no_grad;
        loss_sum[0] += loss.detach().to(torch::kFloat64) * n;
        loss_sum[1] += n;
      }
      epoch_images += n;
      if (batch_index % c.log_every == 0 && world.rank == 0) {
        const double elapsed = seconds_since(epoch_start);
        const double rate = static_cast<double>(epoch_images * world.size) / std::max(elapsed, 1e-9);
        const double batch_seconds = elapsed / static_cast<double>(batch_index + 1);
        const long remaining = (batches_per_epoch - batch_index - 1) +
                               batches_per_epoch * static_cast<long>(c.epochs - epoch - 1);
        const long remaining_by_steps =
            c.max_steps > 0 ? (c.max_steps - step) * c.accumulate : remaining;
        log::info(progress_line(epoch, batch_index, batches_per_epoch, loss.item<double>(), rate,
                                batch_seconds * static_cast<double>(std::min(remaining, remaining_by_steps))));
      }
      profile.charge(StepProfile::kOther);
      ++batch_index;
      if (last_micro) {
        preempted_by = checkpoints.at_step_boundary({epoch, batch_index, step}, loss_sum);
        if (preempted_by) break;
      }
      if (c.max_steps > 0 && step >= c.max_steps && last_micro) break;
    }
    if (preempted_by) break;
    comm->all_reduce(loss_sum, ReduceOp::Sum);
    const double epoch_seconds = seconds_since(epoch_start);
    train_seconds += epoch_seconds;
    images_trained += epoch_images * world.size;
    if (c.profile) print_profile(profile, *comm, device, epoch, world.num_nodes == 1);

    if (c.eval) last_eval = evaluate(*model, data.test, data.normalization, *comm, device, format);
    EpochMetrics row;
    const auto ls = loss_sum.cpu();
    row.epoch = epoch;
    row.steps = step;
    row.train_loss = ls[0].item<double>() / std::max(1.0, ls[1].item<double>());
    row.test_loss = last_eval.loss;
    row.test_accuracy = last_eval.accuracy;
    row.lr = learning_rate(schedule, std::max(0L, step - 1));
    row.images_per_second = static_cast<double>(epoch_images * world.size) / std::max(epoch_seconds, 1e-9);
    row.epoch_seconds = epoch_seconds;
    row.world_size = world.size;
    if (world.rank == 0) {
      log::info(strprintf("Epoch %d done: train loss %.4f, test loss %.4f, test accuracy %.4f, %.0f img/s, %.1f s",
                          epoch, row.train_loss, row.test_loss, row.test_accuracy, row.images_per_second,
                          epoch_seconds));
      if (!c.metrics.empty()) metrics.append(row);
    }
    const bool last = epoch + 1 == c.epochs || (c.max_steps > 0 && step >= c.max_steps);
    checkpoints.at_epoch_end(batch_index < batches_per_epoch ? TrainingPosition{epoch, batch_index, step}
                                                             : TrainingPosition{epoch + 1, 0, step},
                             loss_sum, last);
  }
  if (preempted_by) return kExitPreempted;  // every rank: the checkpoint is complete (at_step_boundary waited)

  // 5. Outputs.
  if (world.rank == 0) {
    save_state_dict(*model, c.output);
    log::info(strprintf("saved %s; total wall time %s", c.output.c_str(),
                        format_duration(seconds_since(run_start)).c_str()));
    log::info(strprintf("RESULT train_seconds=%.2f images_per_second=%.1f test_accuracy=%.4f", train_seconds,
                        static_cast<double>(images_trained) / std::max(train_seconds, 1e-9), last_eval.accuracy));
  }
  comm->barrier();
  return kExitOk;
}

}  // namespace cifar
