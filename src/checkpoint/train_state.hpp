// What a checkpoint saves of a live run and restores into one: the model's
// state dict and the stateful parts (optimiser, loss scaler, lookahead, the
// default generators), each saving and restoring itself (util/stateful.hpp).
// Only rank 0 captures: after each step's all-reduce every rank holds the
// same model and optimiser state; what differs per rank (the sampler shard
// and the loader's augmentation stream) is derived from (seed, rank, epoch)
// plus the position, so it is recomputed, not stored.
#pragma once

#include <torch/torch.h>

#include <string>

#include "checkpoint/format.hpp"
#include "model/model.hpp"
#include "optim/lookahead.hpp"
#include "step/precision.hpp"

namespace cifar {

// The trainer's live state.
struct TrainState {
  Model& model;
  torch::optim::Optimizer& optimizer;
  LossScaler& scaler;
  torch::Device device;
  Lookahead* lookahead = nullptr;       // null or disabled: none
  const long* skipped_steps = nullptr;  // the divergence guard's count, when there is one
};

// The state of a run and its `totals`, ready to write. Call on the writing rank only.
Checkpoint capture_checkpoint(const StoredRunDefinition& run, const TrainingPosition& position, double epoch_loss_sum,
                              double epoch_loss_count, const TrainState& state, const RunTotals& totals = {});
// Loads the model and each stateful part, in the order they were saved; a
// part that does not fit is a CheckpointError naming `path`.
void restore_checkpoint(const Checkpoint& checkpoint, const std::string& path, TrainState& state);

}  // namespace cifar
