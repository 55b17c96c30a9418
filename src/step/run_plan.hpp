// RunPlan: the arithmetic of a run, fixed before its first step — batches and
// optimiser steps per epoch, the run's length in steps (the schedule's
// length), and what is left of it for the ETA. A pure function of the
// training-set size, the world size and the configuration, so every rank
// computes the same plan without communicating.
#pragma once

#include <cstdint>
#include <string>

#include "config/run_config.hpp"

namespace cifar {

struct RunPlan {
  int epochs = 1;
  int batch_size = 1;  // per rank, per micro-batch
  int accumulate = 1;  // micro-batches per optimiser step
  int64_t samples_per_rank = 0;
  long batches_per_epoch = 0;  // per rank, the same on every rank
  long steps_per_epoch = 0;    // optimiser steps; the last one may have fewer micro-batches
  long total_steps = 0;        // of the run: steps_per_epoch * epochs, or --max-steps when smaller
  long warmup_steps = 0;

  // Batch `batch` (0-based in its epoch) is the first / last micro-batch of an optimiser step.
  bool starts_step(long batch) const { return batch % accumulate == 0; }
  bool ends_step(long batch) const { return ends_step(batch, batches_per_epoch); }
  // The same in an epoch of `batches` micro-batches (the rest of an epoch
  // resumed at another world size keeps the writing run's count).
  bool ends_step(long batch, long batches) const { return (batch + 1) % accumulate == 0 || batch + 1 == batches; }
  bool finished(long steps_done) const { return steps_done >= total_steps; }
  // Batches this rank has left after finishing batch `batch` of `epoch` with
  // `steps_done` optimiser steps done: the rest of this epoch and the later
  // ones, or fewer when --max-steps ends the run first.
  long remaining_batches(int epoch, long batch, long steps_done) const;
};

// The per-rank batch: --batch-size, or --global-batch-size divided among the
// ranks (ConfigError naming both numbers when it does not divide).
int per_rank_batch_size(const TrainingConfig& training, int world_size);

// ---- Resuming at another world size ----------------------------------------

// What one optimiser step trains: micro-batches of `batch_size` per rank on
// `world_size` ranks, `accumulate` of them per step.
struct StepShape {
  int batch_size = 1;
  int world_size = 1;
  int accumulate = 1;
  int64_t micro_batch() const { return static_cast<int64_t>(batch_size) * world_size; }  // over all ranks
  int64_t global_batch() const { return micro_batch() * accumulate; }                    // samples per optimiser step
  bool operator==(const StepShape& o) const {
    return batch_size == o.batch_size && world_size == o.world_size && accumulate == o.accumulate;
  }
  bool operator!=(const StepShape& o) const { return !(*this == o); }
};
// "6 per rank x 4 ranks", "2 per rank x 4 ranks x 3 micro-batches"
std::string to_string(const StepShape& shape);

// --elastic-batch global: the shape on `world_size` ranks that keeps
// `written`'s global batch per optimiser step. The same accumulation with
// written.micro_batch() / world_size per rank when that divides (every
// micro-batch then trains what the writing run's did). Otherwise, when the
// writing run accumulated and `world_size` divides the step's batch but not
// the micro-batch, the fewest micro-batches per step whose per-rank batch is
// whole and no larger than the writing run's (so a rank needs no more memory
// than there). Else ConfigError naming the numbers, the world sizes that
// divide the global batch, and --elastic-batch per-rank.
StepShape elastic_step_shape(const StepShape& written, int world_size);

RunPlan make_run_plan(int64_t train_size, int world_size, const TrainingConfig& training, bool drop_last,
                      double warmup_epochs);

}  // namespace cifar
