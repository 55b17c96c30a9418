// The checkpoint file format: one torch::pickle_save'd dict whose keys are
// declared once, in format.cpp's key table (name, type, the format version
// that added it), which both encode_checkpoint and read_checkpoint walk.
// The file's contents: the writing run's record, the position, the partial
// epoch's loss sums, the run's totals, the model's state dict and the entries of the stateful
// parts (optimiser, loss scaler, lookahead, generators: util/stateful.hpp).
// See docs/checkpoint.md for every key.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "data/training_position.hpp"
#include "step/run_totals.hpp"
#include "util/stateful.hpp"

namespace cifar {

// Version 2 adds the epoch's global position and the world size whose
// sampler ordered the epoch (resuming at another world size); version 3 the
// per-rank batch of the run that began the epoch, the origin of the batch
// count, the global batch --lr is for and whether the step shape changed
// (resuming with another global micro-batch or accumulation); version 4 the
// run's totals, which the owner record beside the file carried before.
// Versions 1 to 3 are still read (what they lack follows from the rest there,
// the totals from their owner record).
inline constexpr int64_t kCheckpointFormatVersion = 4;

// What a checkpoint records of the run that wrote it: the stored part of a
// run's definition (RunDefinition, resume.hpp, adds what is compared but not stored).
struct StoredRunDefinition {
  std::string model;
  std::string optimizer;
  int world_size = 1;
  int batch_size = 1;  // per rank
  int accumulate = 1;
  // The global batch per optimiser step that --lr is the rate for: the
  // starting run's. Another than batch_size * world_size * accumulate after
  // an --elastic-batch per-rank resume, which scaled the rate with the batch.
  int64_t lr_global_batch = 0;
  // Whether the step shape changed at some resume (another global micro-batch
  // or accumulation): earlier epochs may then have had another number of
  // steps, so the step count no longer follows from epoch and batch.
  bool reshaped = false;
  int64_t train_size = 0;
  std::string data_identity;        // Dataset::identity of the training data ("" in older files)
  std::vector<std::string> config;  // RunConfig::describe() of the run that wrote it
};

// One checkpoint file's contents.
struct Checkpoint {
  StoredRunDefinition run;
  TrainingPosition position;  // order_world_size and order_batch_size always set (never 0) in a file
  // Samples of the epoch's global order already trained: positions [0, this)
  // of distributed_sampler.hpp's global_sample_order() for order_world_size
  // ranks; batch_origin + batch_in_epoch * batch_size * world_size.
  int64_t global_position = 0;
  double epoch_loss_sum = 0;  // the partial epoch's loss sum and sample count, over all ranks
  double epoch_loss_count = 0;
  c10::IValue model_state;  // the model's state dict (name -> CPU tensor)
  long skipped_steps = 0;   // --on-nonfinite skip
  // What the run had done (from format version 4; none in older files).
  std::optional<RunTotals> totals;
  // The stateful parts' entries by key (read: checked, of the declared types).
  StateDict parts = make_state_dict();
};

// Throws std::logic_error when a part saved a key the table does not declare.
std::vector<char> encode_checkpoint(const Checkpoint& checkpoint);
// Throws CheckpointError naming `path` and the fix when the file is missing,
// truncated, corrupt or not a cifar_mpi checkpoint of a known format version.
Checkpoint read_checkpoint(const std::string& path);

}  // namespace cifar
