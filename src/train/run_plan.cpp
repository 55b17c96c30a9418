// Run arithmetic (see run_plan.hpp).
#include "train/run_plan.hpp"

#include <algorithm>

#include "data/batch_loader.hpp"
#include "data/distributed_sampler.hpp"

namespace cifar {

RunPlan make_run_plan(int64_t train_size, int world_size, const TrainingConfig& training, bool drop_last,
                      double warmup_epochs) {
  RunPlan p;
  p.epochs = training.epochs;
  p.accumulate = training.accumulate;
  p.samples_per_rank = samples_per_rank(train_size, world_size, drop_last);
  p.batches_per_epoch = static_cast<long>(batches_per_epoch(p.samples_per_rank, training.batch_size, drop_last));
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
