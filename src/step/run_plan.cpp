// Run arithmetic (see run_plan.hpp).
#include "step/run_plan.hpp"

#include <algorithm>
#include <vector>

#include <boost/algorithm/string/join.hpp>
#include <boost/range/adaptor/transformed.hpp>

#include "data/batch_loader.hpp"
#include "data/distributed_sampler.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {

int per_rank_batch_size(const TrainingConfig& training, int world_size) {
  const int global = training.global_batch_size;
  if (global == 0) return training.batch_size;
  if (global % world_size != 0) {
    throw ConfigError(
        strprintf("--global-batch-size %d does not divide among %d ranks; use a world size that "
                  "divides it, or --batch-size per rank",
                  global, world_size));
  }
  return global / world_size;
}

std::string to_string(const StepShape& s) {
  std::string text = strprintf("%d per rank x %d ranks", s.batch_size, s.world_size);
  if (s.accumulate != 1) text += strprintf(" x %d micro-batches", s.accumulate);
  return text;
}

namespace {
// The divisors of n >= 1, smallest first (by trial up to its square root:
// the numbers come from a checkpoint file).
std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}
}  // namespace

StepShape elastic_step_shape(const StepShape& written, int world_size) {
  CIFAR_CHECK(world_size >= 1, ConfigError,
              strprintf("resume on %d ranks: the world size must be at least 1", world_size));
  if (written.micro_batch() % world_size == 0)
    return {static_cast<int>(written.micro_batch() / world_size), world_size, written.accumulate};
  const int64_t global = written.global_batch();
  if (global % world_size == 0) {
    // per-rank batch x accumulation = global / world_size; one sample per
    // rank and micro-batch always qualifies.
    const int64_t per_rank = global / world_size;
    for (const int64_t accumulate : divisors(per_rank))
      if (per_rank / accumulate <= written.batch_size)
        return {static_cast<int>(per_rank / accumulate), world_size, static_cast<int>(accumulate)};
  }
  const std::string sizes = boost::algorithm::join(
      divisors(global) | boost::adaptors::transformed([](int64_t d) { return std::to_string(d); }), ", ");
  throw ConfigError(
      strprintf("resume on %d rank(s): the checkpoint's global batch of %lld samples per optimiser step "
                "(%s) does not divide among %d ranks, with or without gradient accumulation; resume on "
                "%s ranks, or pass --elastic-batch per-rank (the per-rank batch kept, the global batch "
                "and the learning rate scaled with the world size)",
                world_size, static_cast<long long>(global), to_string(written).c_str(), world_size, sizes.c_str()));
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
    throw ConfigError(
        strprintf("each rank has %lld training samples, fewer than one batch of %d with --drop-last: "
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
