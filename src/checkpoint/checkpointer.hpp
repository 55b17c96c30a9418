// The checkpoint policy: file names in --checkpoint-dir and pruning, when to
// write (every N steps or epochs, at the end, when preempted), writing
// collectively, and --resume none|auto|PATH. Files are
// <checkpoint-dir>/ckpt-e<epoch>-s<step>.pt (epoch: the one the run
// continues in), written by rank 0 atomically (util/atomic_file.hpp).
// See docs/checkpoint.md.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "checkpoint/format.hpp"
#include "checkpoint/resume.hpp"
#include "checkpoint/train_state.hpp"
#include "comm/communicator.hpp"
#include "config/run_config.hpp"
#include "outputs/checkpoint_files.hpp"
#include "outputs/owner_records.hpp"
#include "step/divergence.hpp"
#include "step/run_plan.hpp"

namespace cifar {

// Deletes all but the newest `keep` of the checkpoints in `folder` that are
// proven run `run_id`'s (checkpoint_record_of, outputs/owner_records.hpp); another run's
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
                      const RunDefinition& run);
// Both together, without restoring anything: what --check-env checks the
// outputs' owners against.
std::string startup_run_id(const CheckpointConfig& config, const RunDefinition& run);

// The checkpoint files a run of `plan` writes from its start, at most (what
// the space check counts): one at each multiple of --checkpoint-every-steps,
// one at the end of every --checkpoint-every-epochs'th epoch, and one at the
// last step; a step due more than once writes one file. A preempted run
// writes one at the step it stops, no more in all. 0 without --checkpoint-dir.
long checkpoint_writes(const CheckpointConfig& config, const RunPlan& plan);

// What a start-up continues: the one value Checkpointer::resume() returns
// and the Trainer applies once. A fresh start has no `path`; everything else
// then holds the configured run.
struct Resumption {
  std::string path;           // the checkpoint resumed, "" for a fresh start
  RunDefinition run;          // as it continues: its step shape, the global batch --lr is for
  RunPlan plan;               // at that step shape, its length in optimiser steps counted
  TrainingPosition position;  // where training continues: the epoch's shard starts here
  double lr_scale = 1;        // the factor on --lr: the run's global batch over --lr's (elastic per-rank)
  std::string run_id;         // the owner records' run id ("" without --checkpoint-dir)
  std::string run_folder;     // where the run's checkpoints are, as its records name it
  RunTotals totals;           // what the run had done, as its checkpoint (or an older one's record) says
  double epoch_loss_sum = 0;  // the resumed epoch's loss sum and count, over all ranks
  double epoch_loss_count = 0;
  long skipped_steps = 0;  // --on-nonfinite skip
  bool resumed() const { return !path.empty(); }
};

// The trainer's side: resumes at start-up, decides when to write, writes
// collectively. Collectives go over `control`, the job's host communicator,
// so deciding costs no GPU synchronisation.
class Checkpointer {
 public:
  // The run is identified by `config`, `control`'s world size and the
  // training data (`train_size` samples, `data_identity`). Before every
  // checkpoint `guard` checks, on every rank, that the state is finite (a
  // diverged run writes nothing).
  Checkpointer(const RunConfig& config, int64_t train_size, const std::string& data_identity, TrainState state,
               DivergenceGuard& guard, Communicator& control);

  // --resume none|auto|PATH: restores the chosen checkpoint's model and
  // optimiser state on every rank and returns where and how the run
  // continues from the configured `plan`; a fresh start returns `plan` at
  // position zero. A --checkpoint-dir holds one run's checkpoints: a run
  // that does not continue that run is refused (--resume none into a folder
  // with checkpoints, or a PATH beside another run's files), and so is a
  // position or step shape the run cannot continue at. Collective; an error
  // stops every rank.
  Resumption resume(const RunPlan& plan);

  // At every optimiser-step boundary (collective): writes a checkpoint when
  // --checkpoint-every-steps is due or a preemption signal reached any rank.
  // `epoch_loss` is this rank's [sum, count] of the epoch so far; `totals`
  // what the run has done, which the checkpoint holds. `epoch_ends`: the step is
  // its epoch's last or the run's (at_epoch_end follows): a checkpoint due by
  // steps is then left to at_epoch_end, so that one state is one file.
  // Returns the preemption signal when the run must stop (exit code 3).
  std::optional<int> at_step_boundary(const TrainingPosition& position, const torch::Tensor& epoch_loss,
                                      const RunTotals& totals, bool epoch_ends);

  // After an epoch's evaluation and metrics (collective): writes a checkpoint
  // when --checkpoint-every-epochs or --checkpoint-every-steps is due or
  // `last` (the run's end).
  // `epoch_loss` is the epoch's [sum, count], already summed over ranks.
  void at_epoch_end(const TrainingPosition& position, const torch::Tensor& epoch_loss, const RunTotals& totals,
                    bool last);

 private:
  bool due_by_steps(const TrainingPosition& position) const;  // --checkpoint-every-steps
  void save(const TrainingPosition& position, double loss_sum, double loss_count, const RunTotals& totals);
  void adopt_run_id(const std::string& path, Resumption& resumption);
  void check_folder_belongs_to_this_run(const std::string& resume_path) const;
  void continue_from(const Checkpoint& checkpoint, Resumption& resumption) const;
  void count_steps(Resumption& resumption) const;

  const RunConfig& run_config_;
  const CheckpointConfig& config_;
  int64_t train_size_;
  RunDefinition run_;
  TrainState state_;
  DivergenceGuard& guard_;
  Communicator& control_;
  std::string last_written_;
  std::string run_id_;
  bool told_about_others_ = false;
};

}  // namespace cifar
