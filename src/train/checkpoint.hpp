// Checkpoints: everything a run needs to continue exactly where it stopped —
// model, optimiser state, loss-scaler state, the position (epoch, batches
// done in it, optimiser steps), the partial epoch's loss sums, the default
// generators' states, the world size and the configuration — in one file
// written atomically (util/atomic_file.hpp) as a torch::pickle_save'd dict.
//
// Files are <checkpoint-dir>/ckpt-e<epoch>-s<step>.pt (epoch: the one the run
// continues in). Only rank 0 writes: after each step's all-reduce every rank
// holds the same model and optimiser state; what differs per rank (the
// sampler shard and the loader's augmentation stream) is derived from (seed,
// rank, epoch) plus the position, so it is recomputed, not stored. The
// default generators are seeded alike on every rank and drawn alike, so rank
// 0's states stand for all. See docs/checkpoint.md.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "config/train_config.hpp"
#include "model/model.hpp"
#include "train/lookahead.hpp"
#include "train/precision.hpp"
#include "train/run_plan.hpp"

namespace cifar {

inline constexpr int64_t kCheckpointFormatVersion = 1;

// Where the run continues: `batch_in_epoch` batches of `epoch` are done
// (always at an optimiser-step boundary) and `step` optimiser steps in all.
struct TrainingPosition {
  int epoch = 0;
  long batch_in_epoch = 0;
  long step = 0;
};

// One checkpoint file's contents.
struct Checkpoint {
  std::string model_name;
  std::string optimizer_name;
  int world_size = 1;
  int batch_size = 1;
  int accumulate = 1;
  int64_t train_size = 0;
  std::string data_identity;  // Dataset::identity of the training data ("" in older files)
  TrainingPosition position;
  double epoch_loss_sum = 0;    // the partial epoch's loss sum and sample count, over all ranks
  double epoch_loss_count = 0;
  std::vector<std::string> config;  // TrainConfig::describe() of the run that wrote it
  c10::IValue model_state;     // the model's state dict (name -> CPU tensor)
  std::string optimizer_state;  // torch::serialize::OutputArchive bytes
  at::Tensor cpu_rng_state;
  at::Tensor device_rng_state;  // undefined for CPU runs
  double loss_scale = 1;
  int loss_scale_clean_steps = 0;
  std::vector<at::Tensor> lookahead_average;  // empty without --lookahead-every
  long skipped_steps = 0;  // --on-nonfinite skip
};

// "ckpt-e0001-s000123.pt"
std::string checkpoint_file_name(const TrainingPosition& position);
// Whether `name` (no folder) is such a name.
bool is_checkpoint_file_name(const std::string& name);
// Checkpoint files in `folder` named by checkpoint_file_name(), newest first
// (highest step, then highest epoch). A missing folder has none.
std::vector<std::string> list_checkpoints(const std::string& folder);
// Deletes all but the newest `keep` of list_checkpoints(folder).
void prune_checkpoints(const std::string& folder, int keep);

std::vector<char> encode_checkpoint(const Checkpoint& checkpoint);
// Throws CheckpointError naming `path` and the fix when the file is missing,
// truncated, corrupt or not a cifar_mpi checkpoint of a known format version.
Checkpoint read_checkpoint(const std::string& path);

// What a checkpoint saves and restores: the trainer's live state.
struct TrainState {
  Model& model;
  torch::optim::Optimizer& optimizer;
  LossScaler& scaler;
  torch::Device device;
  Lookahead* lookahead = nullptr;  // null or disabled: none
  const long* skipped_steps = nullptr;  // the divergence guard's count, when there is one
};

// What a run that continues a checkpoint must share with the run that wrote
// it: the options that define the run (TrainConfig::run_definition()), the
// world size and the training data's content.
struct RunIdentity {
  std::string model;
  std::string optimizer;
  int world_size = 1;
  int batch_size = 1;  // per rank
  int accumulate = 1;
  int64_t train_size = 0;
  std::string data_identity;        // Dataset::identity
  std::string data_path;            // names the data in messages
  std::vector<std::string> config;  // TrainConfig::describe(), stored; its run-defining keys are compared
  std::vector<std::pair<std::string, std::string>> defining;  // TrainConfig::run_definition()
};
RunIdentity run_identity(const TrainConfig& config, int world_size, int64_t train_size,
                         const std::string& data_identity);

// The state of a run, ready to write. Call on the writing rank only.
Checkpoint capture_checkpoint(const RunIdentity& run, const TrainingPosition& position, double epoch_loss_sum,
                              double epoch_loss_count, const TrainState& state);
// Throws CheckpointError unless `run` can continue `checkpoint` exactly: the
// same world size, the same value of every run-defining option (a key the
// checkpoint does not record counts as its default) and the same training
// data. The message names `path`, every differing key with both values, and
// the fix.
void check_resumable(const Checkpoint& checkpoint, const std::string& path, const RunIdentity& run);
// Why `position`, read from a checkpoint, cannot be where a run of `plan`
// stopped ("" when it can): checkpoints are written at optimiser-step
// boundaries, and for a run of the same shape (check_resumable) the step count
// follows from the epoch and the batch.
std::string position_problem(const TrainingPosition& position, const RunPlan& plan);
// A warning for a resumed run whose length changed (--epochs, --max-steps)
// under a schedule that depends on it (cosine, one-cycle), or "".
std::string length_change_note(const Checkpoint& checkpoint, const RunIdentity& run);
// Loads model, optimiser, loss scaler and generator states (checked first).
void restore_checkpoint(const Checkpoint& checkpoint, const std::string& path, TrainState& state);

// The trainer's side: decides when to write, writes collectively, resumes.
// Collectives go over `control`, the job's host communicator, so deciding
// costs no GPU synchronisation.
class Checkpointer {
 public:
  // `before_write` runs on every rank before every checkpoint is written (the
  // divergence guard: it may end the run instead).
  Checkpointer(const CheckpointConfig& config, RunIdentity run, TrainState state, Communicator& control,
               std::function<void()> before_write);

  // --resume none|auto|PATH: restores the chosen checkpoint on every rank and
  // returns it (its model and optimiser state already applied), or nullopt
  // for a fresh start. A --checkpoint-dir holds one run's checkpoints: a run
  // that does not continue that run is refused (--resume none into a folder
  // with checkpoints, or a PATH beside another run's files). Collective; an
  // error stops every rank.
  std::optional<Checkpoint> resume();
  // The checkpoint resume() restored ("" before, or for a fresh start).
  const std::string& resumed_path() const { return resumed_path_; }

  // At every optimiser-step boundary (collective): writes a checkpoint when
  // --checkpoint-every-steps is due or a preemption signal reached any rank.
  // `epoch_loss` is this rank's [sum, count] of the epoch so far. Returns the
  // signal number when the run must stop (exit code 3), else 0.
  int at_step_boundary(const TrainingPosition& position, const torch::Tensor& epoch_loss);

  // After an epoch's evaluation and metrics (collective): writes a checkpoint
  // when --checkpoint-every-epochs is due or `last` (the run's end).
  // `epoch_loss` is the epoch's [sum, count], already summed over ranks.
  void at_epoch_end(const TrainingPosition& position, const torch::Tensor& epoch_loss, bool last);

 private:
  void save(const TrainingPosition& position, double loss_sum, double loss_count);
  std::string choose_resume_path() const;
  void check_folder_belongs_to_this_run(const std::string& resume_path) const;

  const CheckpointConfig& config_;
  RunIdentity run_;
  TrainState state_;
  Communicator& control_;
  std::function<void()> before_write_;
  std::string resumed_path_;
  std::string last_written_;
};

}  // namespace cifar
