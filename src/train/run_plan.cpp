// Run arithmetic (see run_plan.hpp).
#include "train/run_plan.hpp"

#include <algorithm>

#include "data/batch_loader.hpp"
#include "data/distributed_sampler.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {

int per_rank_batch_size(const TrainingConfig& training, int world_size) {
  const int global = training.global_batch_size;
  if (global == 0) return training.batch_size;
  if (global % world_size != 0) {
    throw ConfigError(strprintf("--global-batch-size %d does not divide among %d ranks; use a world size that "
                                "divides it, or --batch-size per rank",
                                global, world_size));
  }
  return global / world_size;
}

RunPlan make_run_plan(int64_t train_size, int world_size, const TrainingConfig& training, bool drop_last,
                      double warmup_epochs) {
  RunPlan p;
  p.epochs = training.epochs;
  p.batch_size = per_rank_batch_size(training, world_size);
  p.accumulate = training.accumulate;
  p.samples_per_rank = samples_per_rank(train_size, world_size, drop_last);
  p.batches_per_epoch = static_cast<long>(batches_per_epoch(p.samples_per_rank, p.batch_size, drop_last));
  if (p.batches_per_epoch == 0) {
    throw ConfigError(strprintf("each rank has %lld training samples, fewer than one batch of %d with --drop-last: "
                                "use a smaller batch, fewer ranks or --drop-last false",
                                static_cast<long long>(p.samples_per_rank), p.batch_size));
  }
  p.steps_per_epoch = (p.batches_per_epoch + p.accumulate - 1) / p.accumulate;
  p.total_steps = p.steps_per_epoch * p.epochs;
  if (training.max_steps > 0) p.total_steps = std::min(p.total_steps, training.max_steps);
  p.warmup_steps = static_cast<long>(warmup_epochs * static_cast<double>(p.steps_per_epoch));
  return p;
}

long RunPlan::remaining_batches(int epoch, long batch, long steps_done) const {
  const long by_epochs = (batches_per_epoch - batch - 1) + batches_per_epoch * static_cast<long>(epochs - epoch - 1);
  const long by_steps = (total_steps - steps_done) * accumulate;
  return std::max(0L, std::min(by_epochs, by_steps));
}

}  // namespace cifar
