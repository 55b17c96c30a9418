// The checkpoint policy (see checkpointer.hpp).
#include "checkpoint/checkpointer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <regex>
#include <tuple>

#include "comm/agreement.hpp"
#include "comm/text_collectives.hpp"
#include "process/preemption.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/md5.hpp"
#include "util/paths.hpp"

namespace cifar {
size_t prune_checkpoints(const std::string& folder, int keep, const std::string& run_id) {
  std::vector<std::string> ours;
  size_t others = 0;
  for (const auto& path : list_checkpoints(folder)) {
    if (checkpoint_record_of(path, run_id)) ours.push_back(path);
    else ++others;
  }
  for (size_t i = static_cast<size_t>(std::max(keep, 0)); i < ours.size(); ++i) {
    if (std::remove(ours[i].c_str()) != 0) {
      log::warn("cannot delete old checkpoint " + ours[i] + ": " + std::strerror(errno));
      continue;
    }
    std::remove(owner_record_path(ours[i]).c_str());  // a record without its file proves nothing
  }
  return others;
}

Checkpointer::Checkpointer(const RunConfig& config, int64_t train_size, const std::string& data_identity,
                           TrainState state, DivergenceGuard& guard, Communicator& control)
    : run_config_(config),
      config_(config.checkpoint),
      train_size_(train_size),
      run_(define_run(config, control.size(), train_size, data_identity)),
      state_(state),
      guard_(guard),
      control_(control) {}

namespace {

// The first of `paths` (newest first) that reads as a checkpoint, or "" when
// none does; each unreadable one is warned about and added to `reasons`.
std::string newest_readable(const std::vector<std::string>& paths, std::string* reasons) {
  for (const auto& path : paths) {
    try {
      read_checkpoint(path);
      return path;
    } catch (const CheckpointError& e) {
      log::warn(skipping_note(e.what(), paths, path));
      *reasons += std::string("\n  ") + e.what();
    }
  }
  return "";
}

}  // namespace

std::string choose_resume_path(const CheckpointConfig& config) {
  using Kind = ResumeRequest::Kind;
  if (config.resume.kind == Kind::None) return "";
  if (config.resume.kind == Kind::Path) return config.resume.path;
  const auto paths = list_checkpoints(config.dir);
  if (paths.empty()) {
    log::info("--resume auto: no checkpoint in " + config.dir + "; starting afresh");
    return "";
  }
  std::string reasons;
  const std::string path = newest_readable(paths, &reasons);
  if (path.empty())
    throw CheckpointError("--resume auto: none of the " + std::to_string(paths.size()) + " checkpoint(s) in " +
                          config.dir + " is readable:" + reasons);
  return path;
}

// A --checkpoint-dir holds the checkpoints of one run, so that pruning (the
// newest --keep-checkpoints stay) never deletes another run's files and
// --resume auto never picks up another run. A run that does not continue the
// folder's run is refused before it trains.
void Checkpointer::check_folder_belongs_to_this_run(const std::string& resume_path) const {
  if (!config_.enabled() || config_.resume.kind == ResumeRequest::Kind::Auto) return;  // auto: checked on resume
  const auto existing = list_checkpoints(config_.dir);
  if (existing.empty()) return;
  if (resume_path.empty())
    throw ConfigError(
        strprintf("--checkpoint-dir %s already holds %zu checkpoint(s) of an earlier run (newest %s); "
                  "continue that run with --resume auto, or start this one in another (empty) "
                  "--checkpoint-dir: a run never writes or prunes beside another run's checkpoints",
                  config_.dir.c_str(), existing.size(), paths::file_name(existing.front()).c_str()));
  std::string reasons;
  const std::string newest = newest_readable(existing, &reasons);
  if (!newest.empty()) check_resumable(read_checkpoint(newest), newest, run_);
}

Resumption Checkpointer::resume(const RunPlan& plan) {
  Resumption resumption;  // a fresh start: the configured run and plan at position zero
  resumption.run = run_;
  resumption.plan = plan;
  std::string path;
  agree_on(control_, [&] {
    if (control_.rank() != 0) return;
    path = choose_resume_path(config_);
    if (!path.empty()) require_sound_owner_record(path);  // an older version's carries the run's totals
    check_folder_belongs_to_this_run(path);
  });
  path = broadcast_string(control_, path);
  adopt_run_id(path, resumption);
  if (path.empty()) return resumption;
  std::optional<Checkpoint> checkpoint;
  agree_on(control_, [&] {
    checkpoint = read_checkpoint(path);
    check_resumable(*checkpoint, path, run_);
    restore_checkpoint(*checkpoint, path, state_);
  });
  // Every rank: the same checkpoint and world, the same verdict (checked above).
  run_ = continued_run(*checkpoint, path, run_);
  resumption.path = path;
  resumption.run = run_;
  continue_from(*checkpoint, resumption);
  if (checkpoint->totals) resumption.totals = *checkpoint->totals;  // else an older file's, from its record
  if (control_.rank() == 0) {
    const auto& p = checkpoint->position;
    log::info(strprintf("resumed from checkpoint %s: epoch %d, %ld batch(es) of it done, step %ld", path.c_str(),
                        p.epoch, p.batch_in_epoch, p.step));
    const std::string note = length_change_note(*checkpoint, run_);
    if (!note.empty()) log::warn(note);
    const std::string elastic = elastic_resume_note(*checkpoint, run_, run_config_.optim);
    if (!elastic.empty()) log::info(elastic);
  }
  if (run_.reshaped) count_steps(resumption);
  resumption.lr_scale = lr_scale(run_);
  resumption.epoch_loss_sum = checkpoint->epoch_loss_sum;
  resumption.epoch_loss_count = checkpoint->epoch_loss_count;
  resumption.skipped_steps = checkpoint->skipped_steps;
  last_written_ = path;
  return resumption;
}

// Where the resumed run continues (before "resumed from" is logged, so that
// a refusal is not preceded by that line): its plan at the step shape it
// continues with, its position, and its length in steps. Every rank holds
// the same checkpoint and plan: the same verdict, no communication.
void Checkpointer::continue_from(const Checkpoint& checkpoint, Resumption& r) const {
  const int world = control_.size();
  try {
    r.plan = resumed_plan(r.path, r.run, r.plan, run_config_, train_size_, world);
    r.position = continued_position(checkpoint, r.path, r.plan, world, run_config_.data.drop_last,
                                    run_config_.training.max_steps);
  } catch (const Error& e) {
    fail_on_every_rank(e, control_.rank());
  }
}

// A run whose step shape changed at some resume had steps of another size
// before: its length in steps is the steps done plus those left at this
// shape, so that it still ends with its last epoch and the schedule with it.
void Checkpointer::count_steps(Resumption& r) const {
  const long steps_before = r.plan.total_steps;
  r.plan.total_steps =
      steps_of_reshaped_run(r.plan, r.position, run_config_, train_size_, control_.size(), control_.rank());
  if (control_.rank() == 0 && r.plan.total_steps != steps_before)
    log::info(strprintf("the run now has %ld optimiser steps (%ld per epoch on %d ranks from the next epoch on)",
                        r.plan.total_steps, r.plan.steps_per_epoch, control_.size()));
}

namespace {

// The id of a run that starts now in `checkpoint_dir` (16 hex digits).
std::string new_run_id(const RunDefinition& run, const std::string& checkpoint_dir) {
  // What defines the run, without how the global batch is split (an elastic
  // resume may change that; the global batch --lr is for stays).
  std::string text =
      paths::resolved(checkpoint_dir) + "\n" + run.data_identity + "\n" + std::to_string(run.lr_global_batch) + "\n";
  for (const auto& [key, value] : run.defining)
    if (key != "batch-size" && key != "global-batch-size" && key != "accumulate") text += key + "=" + value + "\n";
  Md5 md5;
  md5.update(text.data(), text.size());
  return md5.hex_digest().substr(0, 16);
}

}  // namespace

// The run's id: the resumed checkpoint's, as its owner record proves it;
// for a fresh start, or a checkpoint without a record (written before
// records existed, or copied without it), the id of a run starting in this
// folder. Rank 0 reads the record and every rank gets the same id (and an
// older version's totals, which its record carried).
// A --resume PATH without --checkpoint-dir continues that run too (its id,
// when the record proves it); a fresh run without one has no id.
std::string run_id_of(const std::optional<OwnerRecord>& record, const CheckpointConfig& config,
                      const RunDefinition& run) {
  return record ? record->run : config.enabled() ? new_run_id(run, config.dir) : "";
}

long checkpoint_writes(const CheckpointConfig& config, const RunPlan& plan) {
  const long total = plan.total_steps;
  if (!config.enabled() || total <= 0) return 0;
  // Distinct steps before the last one; the last always writes.
  const long every_steps = config.every_steps;
  const long by_steps = every_steps > 0 ? (total - 1) / every_steps : 0;
  long by_epochs = 0, both = 0;
  const long every_epochs = config.every_epochs, per_epoch = plan.steps_per_epoch;
  if (every_epochs > 0 && per_epoch > 0 && every_epochs <= (total - 1) / per_epoch) {
    const long spacing = every_epochs * per_epoch;  // steps between two epochs' checkpoints; below total
    by_epochs = std::min<long>(plan.epochs / every_epochs, (total - 1) / spacing);
    // Those on a multiple of --checkpoint-every-steps too: every (every_steps / gcd)'th.
    if (every_steps > 0) both = by_epochs / (every_steps / std::gcd(spacing, every_steps));
  }
  return by_steps + by_epochs - both + 1;
}

std::string startup_run_id(const CheckpointConfig& config, const RunDefinition& run) {
  const std::string path = choose_resume_path(config);
  if (!path.empty()) require_sound_owner_record(path);
  return run_id_of(path.empty() ? std::nullopt : checkpoint_record(path), config, run);
}

void Checkpointer::adopt_run_id(const std::string& path, Resumption& resumption) {
  if (!config_.enabled() && path.empty()) return;
  std::string text;
  if (control_.rank() == 0 && !path.empty())
    if (const auto record = checkpoint_record(path)) text = owner_record_text(*record);
  const auto record = parse_owner_record(broadcast_string(control_, text));
  run_id_ = run_id_of(record, config_, run_);
  resumption.run_id = run_id_;
  resumption.run_folder = config_.enabled() || !record ? config_.dir : record->checkpoint_dir;  // where it writes now
  resumption.totals = record ? record->totals : RunTotals{};
}

// Every rank alike, before any checkpoint: a diverged run (or one whose
// parameters overflowed) writes nothing.
void Checkpointer::save(const TrainingPosition& position, double loss_sum, double loss_count, const RunTotals& totals) {
  const std::string path = paths::join(config_.dir, checkpoint_file_name(position));
  // Written again when this exact state is on disk already (a step
  // checkpoint at the epoch's end): its totals have moved on (the epoch's
  // time, a target reached, a row written).
  guard_.require_finite_state(state_.model, position.step);  // a diverged run writes nothing
  agree_on(control_, [&] {
    if (control_.rank() != 0) return;  // every rank holds the same state; the others wait here
    // A folder that cannot be made is reported by the write below, with the file's name.
    paths::create_directories(config_.dir);
    // A job killed between an earlier write and its pruning left one
    // checkpoint too many: pruned first, so that a folder with room for
    // --keep-checkpoints + 1 files always takes the next one.
    prune_checkpoints(config_.dir, config_.keep, run_id_);
    const auto bytes = encode_checkpoint(capture_checkpoint(run_, position, loss_sum, loss_count, state_, totals));
    // The record first: a checkpoint under its final name is always proven
    // this run's (a crash in between leaves a record without its file).
    OwnerRecord record = owner_record(run_id_, "checkpoint", config_.dir);
    record.size = static_cast<int64_t>(bytes.size());
    write_owner_record(owner_record_path(path), record);
    write_recorded_file(path, [&] { write_file_atomically(path, bytes); });
    const size_t others = prune_checkpoints(config_.dir, config_.keep, run_id_);
    if (others > 0 && !told_about_others_) {
      log::warn(
          strprintf("%s holds %zu checkpoint(s) not proven this run's (run %s; another run's, or without an "
                    "owner record): they are never pruned; move them to their own folder, or delete them",
                    config_.dir.c_str(), others, run_id_.c_str()));
      told_about_others_ = true;
    }
    log::info(strprintf("checkpoint %s (epoch %d, batch %ld, step %ld)", path.c_str(), position.epoch,
                        position.batch_in_epoch, position.step));
  });
  last_written_ = path;
}

bool Checkpointer::due_by_steps(const TrainingPosition& position) const {
  return config_.every_steps > 0 && position.step % config_.every_steps == 0;
}

std::optional<int> Checkpointer::at_step_boundary(const TrainingPosition& position, const torch::Tensor& epoch_loss,
                                                  const RunTotals& totals, bool epoch_ends) {
  if (!config_.enabled()) return std::nullopt;
  const AgreedPreemption preempted = preemption_agreed(control_);
  const int signal = preempted.signal;
  if (signal == 0 && (epoch_ends || !due_by_steps(position))) return std::nullopt;
  auto loss = epoch_loss.to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
  control_.all_reduce(loss, ReduceOp::Sum);
  RunTotals recorded = totals;
  recorded.partial_epoch_row = false;
  save(position, loss[0].item<double>(), loss[1].item<double>(), recorded);
  if (signal == 0) return std::nullopt;
  if (control_.rank() == 0)
    log::info(
        strprintf("preempted by %s: stopping at step %ld with checkpoint %s; exit code %d (resume with "
                  "--resume auto)",
                  preempted.by.c_str(), position.step, last_written_.c_str(), kExitPreempted));
  return signal;
}

void Checkpointer::at_epoch_end(const TrainingPosition& position, const torch::Tensor& epoch_loss,
                                const RunTotals& totals, bool last) {
  if (!config_.enabled()) return;
  const bool due =
      (config_.every_epochs > 0 && position.epoch % config_.every_epochs == 0 && position.batch_in_epoch == 0) ||
      due_by_steps(position);
  if (!due && !last) return;
  // At an epoch boundary the next epoch's loss sums start from zero.
  const auto loss = position.batch_in_epoch == 0 ? torch::zeros({2}, torch::kFloat64) : epoch_loss.cpu();
  // Inside an epoch (a --max-steps end), the epoch's row was just written for its part so far.
  RunTotals recorded = totals;
  recorded.partial_epoch_row = position.batch_in_epoch != 0;
  save(position, loss[0].item<double>(), loss[1].item<double>(), recorded);
}

}  // namespace cifar
