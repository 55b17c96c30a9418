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
#include "optim/lookahead.hpp"
#include "train/precision.hpp"
#include "train/run_plan.hpp"

namespace cifar {

// Version 2 adds the epoch's global position and the world size whose
// sampler ordered the epoch (resuming at another world size); version 3 the
// per-rank batch of the run that began the epoch, the origin of the batch
// count, the global batch --lr is for and whether the step shape changed
// (resuming with another global micro-batch or accumulation). Versions 1 and
// 2 are still read (what they lack follows from the rest there).
inline constexpr int64_t kCheckpointFormatVersion = 3;

// Where the run continues: `batch_in_epoch` batches of `epoch` are done
// (always at an optimiser-step boundary) and `step` optimiser steps in all.
struct TrainingPosition {
  int epoch = 0;
  long batch_in_epoch = 0;
  long step = 0;
  // The run that began this epoch, whose DistributedSampler order (and, with
  // --drop-last, whose end) the epoch follows: its world size (0: this run's
  // own epoch) and per-rank micro-batch. Another run's for the rest of an
  // epoch resumed at another world size or batch (elastic resume).
  int order_world_size = 0;
  int order_batch_size = 0;
  // Where batch 0 of batch_in_epoch's count lies in the epoch's global order:
  // 0, except for the rest of an epoch whose global position is not a whole
  // number of this run's optimiser steps (--elastic-batch per-rank).
  int64_t batch_origin = 0;
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
  TrainingPosition position;    // order_world_size and order_batch_size always set (never 0) in a file
  // Samples of the epoch's global order already trained: positions [0, this)
  // of distributed_sampler.hpp's global_sample_order() for order_world_size
  // ranks; batch_origin + batch_in_epoch * batch_size * world_size.
  int64_t global_position = 0;
  // The global batch per optimiser step that --lr is the rate for: the
  // starting run's. Another than batch_size * world_size * accumulate after
  // an --elastic-batch per-rank resume, which scaled the rate with the batch.
  int64_t lr_global_batch = 0;
  // Whether the step shape changed at some resume (another global micro-batch
  // or accumulation): earlier epochs may then have had another number of
  // steps, so the step count no longer follows from epoch and batch.
  bool reshaped = false;
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
// global batch per optimiser step (the world size, per-rank batch and
// accumulation may change: resumed_step_shape) and the training data's
// content.
struct RunIdentity {
  std::string model;
  std::string optimizer;
  int world_size = 1;
  int batch_size = 1;  // per rank
  int accumulate = 1;
  ElasticBatch elastic_batch = ElasticBatch::Global;  // --elastic-batch
  int64_t lr_global_batch = 0;  // Checkpoint::lr_global_batch
  bool reshaped = false;        // Checkpoint::reshaped
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
// same global batch per optimiser step (another world size, per-rank batch or
// accumulation is fine when resumed_step_shape() accepts it; with
// --elastic-batch per-rank, the same batch options), the same value of every
// other run-defining option (a key the checkpoint does not record counts as
// its default) and the same training data. The message names `path`, every
// differing key with both values, and the fix.
void check_resumable(const Checkpoint& checkpoint, const std::string& path, const RunIdentity& run);
// The step shape `run` trains with when it continues `checkpoint`.
// --elastic-batch per-rank: the run's batch options as they are, on its world
// size. global: the run's batch options when they give the checkpoint's global
// batch per optimiser step (another split: more accumulation for less memory,
// say); elastic_step_shape() of the checkpoint's shape when they are the
// options the writing run had (the same command line on another allocation).
// Otherwise, on the same world size, the run's own (check_resumable refuses it
// as a run difference); on another, or when elastic_step_shape() finds none,
// CheckpointError naming the numbers and the fix.
StepShape resumed_step_shape(const Checkpoint& checkpoint, const std::string& path, const RunIdentity& run);
// `run` as it continues `checkpoint` (Checkpointer::resume): with the step
// shape resumed_step_shape() chose, the global batch --lr is for carried on,
// and whether the shape changed at this or an earlier resume.
RunIdentity continued_run(const Checkpoint& checkpoint, const std::string& path, RunIdentity run);
// Why `position`, read from a checkpoint, cannot be where a run of `plan`
// stopped ("" when it can): checkpoints are written at optimiser-step
// boundaries, and for a run of the same shape throughout (check_resumable)
// the step count follows from the epoch and the batch.
// With `check_step` false (a run whose earlier epochs may have had another
// number of steps), only the batch is checked.
std::string position_problem(const TrainingPosition& position, const RunPlan& plan, bool check_step = true);
// Where a run of `plan` (its step shape as resumed_step_shape chose it) on
// `world_size` ranks continues `checkpoint`, whose position is first checked
// as its writer's (position_problem). The epoch is the run's own — its
// sampler shard, resumed at a batch — when a run of its world size and
// per-rank batch began it and the global position is a whole number of its
// optimiser steps, or the epoch's last step is done. Otherwise it is an
// elastic epoch (order_world_size set): the rest of the beginning run's order
// from the global position, in this run's micro-batches, counted from the
// origin that puts the position on a step boundary. CheckpointError naming
// `path` when the position is not one its writer could have reached, or the
// rest's short last micro-batch does not divide among `world_size` ranks.
TrainingPosition continued_position(const Checkpoint& checkpoint, const std::string& path, const RunPlan& plan,
                                    int world_size, bool drop_last);
// The log line of a resume that changes the step shape, or "" when it keeps
// it: both shapes, the global batch kept (--elastic-batch global) or changed
// and the learning rate that follows (per-rank; `lr` is --lr), and from
// which global position the rest of the epoch is re-sharded.
std::string elastic_resume_note(const Checkpoint& checkpoint, const RunIdentity& run, double lr);
// The factor on --lr for `run`: its global batch per step over the one --lr is for.
double lr_scale(const RunIdentity& run);
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
  // The run as it trains and records itself in its checkpoints: after
  // resume(), its step shape as resumed_step_shape() chose it, --lr's global
  // batch and whether the shape ever changed, as continued.
  const RunIdentity& run() const { return run_; }

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
