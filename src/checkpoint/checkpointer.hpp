// The checkpoint policy: file names in --checkpoint-dir and pruning, when to
// write (every N steps or epochs, at the end, when preempted), writing
// collectively, and --resume none|auto|PATH. Files are
// <checkpoint-dir>/ckpt-e<epoch>-s<step>.pt (epoch: the one the run
// continues in), written by rank 0 atomically (util/atomic_file.hpp).
// See docs/checkpoint.md.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/format.hpp"
#include "outputs/checkpoint_files.hpp"
#include "checkpoint/resume.hpp"
#include "outputs/owner_records.hpp"
#include "checkpoint/train_state.hpp"
#include "comm/communicator.hpp"
#include "config/train_config.hpp"

namespace cifar {

// Deletes all but the newest `keep` of the checkpoints in `folder` that are
// proven run `run_id`'s (checkpoint_record_of, run_files.hpp); another run's
// files, and files without a record, are never deleted. Returns how many
// checkpoints of the folder are not that run's.
size_t prune_checkpoints(const std::string& folder, int keep, const std::string& run_id);

// Rank 0's choice of the checkpoint a start-up resumes: --resume PATH as
// given; --resume auto the newest file in --checkpoint-dir that reads as a
// checkpoint (unreadable ones skipped with a warning, all unreadable an
// error); "" for a fresh start.
std::string choose_resume_path(const CheckpointConfig& config);
// The run id a start-up adopts: the owner record's of the checkpoint it
// resumes (`record`), else a new run's in --checkpoint-dir, else "" (no
// --checkpoint-dir: the run owns nothing).
std::string run_id_of(const std::optional<OwnerRecord>& record, const CheckpointConfig& config,
                      const RunIdentity& run);
// Both together, without restoring anything: what --check-env checks the
// outputs' owners against.
std::string startup_run_id(const CheckpointConfig& config, const RunIdentity& run);

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
  // error stops every rank. `continue_at` (every rank) is the caller's check
  // of where the run continues, run before "resumed from" is logged, so that
  // its refusal is not preceded by that line.
  using ContinueAt = std::function<void(const Checkpoint&, const RunIdentity&)>;
  std::optional<Checkpoint> resume(const ContinueAt& continue_at = {});
  // The checkpoint resume() restored ("" before, or for a fresh start).
  const std::string& resumed_path() const { return resumed_path_; }
  // The run as it trains and records itself in its checkpoints: after
  // resume(), its step shape as resumed_step_shape() chose it, --lr's global
  // batch and whether the shape ever changed, as continued.
  const RunIdentity& run() const { return run_; }
  // After resume(): the run's id (run_files.hpp; "" without --checkpoint-dir)
  // and what the run had done at the resumed checkpoint, as its owner record
  // says (zeros for a fresh start or a checkpoint without a record).
  const std::string& run_id() const { return run_id_; }
  // Where the run's checkpoints are, as its records name it.
  const std::string& run_folder() const { return run_folder_; }
  const RunTotals& resumed_totals() const { return resumed_totals_; }
  // What each checkpoint's record holds of the run's totals (rank 0, at every write).
  void set_totals_source(std::function<RunTotals()> totals) { totals_ = std::move(totals); }

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
  void save(const TrainingPosition& position, double loss_sum, double loss_count, bool partial_epoch_row);
  void adopt_run_id(const std::string& path);
  void check_folder_belongs_to_this_run(const std::string& resume_path) const;

  const CheckpointConfig& config_;
  RunIdentity run_;
  TrainState state_;
  Communicator& control_;
  std::function<void()> before_write_;
  std::string resumed_path_;
  std::string last_written_;
  std::string run_id_;
  std::string run_folder_;
  RunTotals resumed_totals_;
  std::function<RunTotals()> totals_;
  bool told_about_others_ = false;
};

}  // namespace cifar
