// The resume rules: whether a run may continue a checkpoint (the same run:
// run-defining options, global batch per optimiser step, training data), the
// step shape it continues with at another world size or batch (elastic
// resume), where in the epoch it continues, and the notes it logs.
// See docs/checkpoint.md ("Resuming", "Elastic resume").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "checkpoint/format.hpp"
#include "config/run_config.hpp"
#include "step/run_plan.hpp"

namespace cifar {

// What a run that continues a checkpoint must share with the run that wrote
// it: the options that define the run (RunConfig::run_definition()), the
// global batch per optimiser step (the world size, per-rank batch and
// accumulation may change: resumed_step_shape) and the training data's
// content. The stored part (StoredRunDefinition) is what its checkpoints record of it.
struct RunDefinition : StoredRunDefinition {
  ElasticBatch elastic_batch = ElasticBatch::Global;          // --elastic-batch
  std::string data_path;                                      // names the data in messages
  std::vector<std::pair<std::string, std::string>> defining;  // RunConfig::run_definition()
};
RunDefinition define_run(const RunConfig& config, int world_size, int64_t train_size, const std::string& data_identity);

// Throws CheckpointError unless `run` can continue `checkpoint` exactly: the
// same global batch per optimiser step (another world size, per-rank batch or
// accumulation is fine when resumed_step_shape() accepts it; with
// --elastic-batch per-rank, the same batch options), the same value of every
// other run-defining option (a key the checkpoint does not record counts as
// its default) and the same training data. The message names `path`, every
// differing key with both values, and the fix.
void check_resumable(const Checkpoint& checkpoint, const std::string& path, const RunDefinition& run);
// The step shape `run` trains with when it continues `checkpoint`.
// --elastic-batch per-rank: the run's batch options as they are, on its world
// size. global: the run's batch options when they give the checkpoint's global
// batch per optimiser step (another split: more accumulation for less memory,
// say); elastic_step_shape() of the checkpoint's shape when they are the
// options the writing run had (the same command line on another allocation).
// Otherwise, on the same world size, the run's own (check_resumable refuses it
// as a run difference); on another, or when elastic_step_shape() finds none,
// CheckpointError naming the numbers and the fix.
StepShape resumed_step_shape(const Checkpoint& checkpoint, const std::string& path, const RunDefinition& run);
// `run` as it continues `checkpoint` (Checkpointer::resume): with the step
// shape resumed_step_shape() chose, the global batch --lr is for carried on,
// and whether the shape changed at this or an earlier resume.
RunDefinition continued_run(const Checkpoint& checkpoint, const std::string& path, RunDefinition run);
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
// rest's short last micro-batch does not divide among `world_size` ranks and
// the run reaches it (`max_steps`, --max-steps, 0 for none, may end it before).
TrainingPosition continued_position(const Checkpoint& checkpoint, const std::string& path, const RunPlan& plan,
                                    int world_size, bool drop_last, long max_steps = 0);
// The plan of `run` as it continues a checkpoint (`path`): `plan`, the
// configured one, when the step shape is the configured one; otherwise the
// plan of the resumed shape's per-rank batch and accumulation (elastic
// resume). ConfigError when --cuda-graphs cannot run that shape.
RunPlan resumed_plan(const std::string& path, const RunDefinition& run, const RunPlan& plan, const RunConfig& config,
                     int64_t train_size, int world_size);
// The length in optimiser steps of a run whose step shape changed at some
// resume (its earlier steps had another size): the steps done at `position`
// plus those left at `plan`'s shape (the rest of this epoch, then whole
// epochs), so that it still ends with its last epoch; --max-steps still caps it.
long steps_of_reshaped_run(const RunPlan& plan, const TrainingPosition& position, const RunConfig& config,
                           int64_t train_size, int world_size, int rank);
// The log line of a resume that changes the step shape, or "" when it keeps
// it: both shapes, the global batch kept (--elastic-batch global) or changed
// and the learning rates that follow (per-rank: --lr, and Muon's --muon-lr
// from `optim`), and from which global position the rest of the epoch is
// re-sharded.
std::string elastic_resume_note(const Checkpoint& checkpoint, const RunDefinition& run, const OptimConfig& optim);
// The factor on --lr for `run`: its global batch per step over the one --lr is for.
double lr_scale(const RunDefinition& run);
// The parts of a run (its RunConfig::describe() lines) whose behaviour
// follows its length in steps: a --schedule other than constant, the low-rate
// tail, lookahead's decay, Muon's progress. Empty: a run made longer or shorter at a resume
// continues exactly as the run of the new length would.
std::vector<std::string> length_dependent_parts(const std::vector<std::string>& config_lines);
// A warning for a resumed run whose length changed (--epochs, --max-steps)
// naming the parts that depend on it (length_dependent_parts), or "".
std::string length_change_note(const Checkpoint& checkpoint, const RunDefinition& run);
// --resume auto's one line for a checkpoint it passes over (unreadable or
// damaged): "skipping <why>" and the older file of `newest_first`
// (list_checkpoints' order) it tries instead, or that none is left.
std::string skipping_note(const std::string& why, const std::vector<std::string>& newest_first,
                          const std::string& skipped);
}  // namespace cifar
