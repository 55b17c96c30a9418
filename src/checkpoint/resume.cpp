// The resume and elastic-resume rules (see resume.hpp).
#include "checkpoint/resume.hpp"

#include <algorithm>
#include <map>

#include <boost/algorithm/string/join.hpp>
#include <boost/range/adaptor/transformed.hpp>

#include "checkpoint/messages.hpp"
#include "data/distributed_sampler.hpp"
#include "data/epoch_shard.hpp"
#include "step/run_plan.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

std::string mismatch(const std::string& path, const char* what, const std::string& saved, const std::string& now,
                     const std::string& fix) {
  return checkpoint_message(path, std::string(" was written with ") + what + " " + saved + ", but this run has " + now +
                                      ": it cannot continue that run exactly; " + fix + kNewRunHint);
}

// RunConfig::describe() lines ("  key = value") as a map.
std::map<std::string, std::string> config_values(const std::vector<std::string>& lines) {
  std::map<std::string, std::string> values;
  for (const auto& line : lines) {
    const auto eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    const auto begin = line.find_first_not_of(' ');
    const auto end = line.find_last_not_of(' ', eq);
    if (begin < eq) values[line.substr(begin, end - begin + 1)] = line.substr(eq + 3);
  }
  return values;
}

struct Difference {
  std::string key, saved, now;
};

// The run-defining options whose values differ; a key the checkpoint does not
// record (written before the option existed) counts as the option's default.
std::vector<Difference> run_differences(const Checkpoint& c, const RunDefinition& run) {
  const auto saved = config_values(c.run.config);
  std::map<std::string, std::string> defaults;
  for (const auto& [key, value] : RunConfig{}.run_definition()) defaults[key] = value;
  std::vector<Difference> differences;
  for (const auto& [key, now] : run.defining) {
    const auto it = saved.find(key);
    const std::string before = it != saved.end() ? it->second : defaults[key];
    if (before != now) differences.push_back({key, before, now});
  }
  return differences;
}

}  // namespace

RunDefinition define_run(const RunConfig& config, int world_size, int64_t train_size,
                         const std::string& data_identity) {
  RunDefinition r;
  r.model = config.model.name;
  r.optimizer = config.optim.optimizer;
  r.world_size = world_size;
  r.batch_size = per_rank_batch_size(config.training, world_size);
  r.accumulate = config.training.accumulate;
  r.elastic_batch = config.checkpoint.elastic_batch;
  r.lr_global_batch = StepShape{r.batch_size, world_size, r.accumulate}.global_batch();
  r.train_size = train_size;
  r.data_identity = data_identity;
  r.data_path = config.data.path;
  r.config = config.describe();
  r.defining = config.run_definition();
  return r;
}

namespace {
bool is_batch_option(const Difference& d) {
  return d.key == "batch-size" || d.key == "global-batch-size" || d.key == "accumulate";
}
StepShape written_shape(const Checkpoint& c) { return {c.run.batch_size, c.run.world_size, c.run.accumulate}; }
}  // namespace

StepShape resumed_step_shape(const Checkpoint& c, const std::string& path, const RunDefinition& run) {
  const StepShape written = written_shape(c);
  const StepShape asked{run.batch_size, run.world_size, run.accumulate};
  if (run.elastic_batch == ElasticBatch::PerRank || asked.global_batch() == written.global_batch()) return asked;
  // The batch options as the checkpoint's run had them: the same command line
  // on another allocation (perhaps after earlier elastic resumes).
  const auto differences = run_differences(c, run);
  if (std::none_of(differences.begin(), differences.end(), is_batch_option)) {
    try {
      return elastic_step_shape(written, run.world_size);
    } catch (const ConfigError& e) {
      throw CheckpointError(checkpoint_message(path, std::string(": ") + e.what() + kNewRunHint));
    }
  }
  // The same world size with another global batch: check_resumable lists it
  // with the run's other differing options.
  if (c.run.world_size == run.world_size) return asked;
  std::string fix;
  try {
    const StepShape kept = elastic_step_shape(written, run.world_size);
    fix = strprintf("pass --batch-size %d --accumulate %d (or --global-batch-size %lld --accumulate %d)",
                    kept.batch_size, kept.accumulate, static_cast<long long>(kept.micro_batch()), kept.accumulate);
  } catch (const ConfigError& e) {
    fix = e.what();
  }
  const auto saved = config_values(c.run.config);
  auto as_written = [&](const char* key) {
    const auto it = saved.find(key);
    return it == saved.end() ? std::string("?") : it->second;
  };
  throw CheckpointError(
      checkpoint_message(
          path,
          strprintf(
              " was written with a global batch of %lld per optimiser step (%s); this run asks for %s = %lld, "
              "and a resumed run keeps the global batch (--elastic-batch global): %s; or give the batch options as that run "
              "had them (--batch-size %s --accumulate %s)",
              static_cast<long long>(written.global_batch()), to_string(written).c_str(), to_string(asked).c_str(),
              static_cast<long long>(asked.global_batch()), fix.c_str(), as_written("batch-size").c_str(),
              as_written("accumulate").c_str())) +
      kNewRunHint);
}

RunDefinition continued_run(const Checkpoint& c, const std::string& path, RunDefinition run) {
  const StepShape shape = resumed_step_shape(c, path, run);
  run.reshaped =
      c.run.reshaped || shape.micro_batch() != written_shape(c).micro_batch() || shape.accumulate != c.run.accumulate;
  run.batch_size = shape.batch_size;
  run.accumulate = shape.accumulate;
  run.lr_global_batch = c.run.lr_global_batch;
  return run;
}

void check_resumable(const Checkpoint& c, const std::string& path, const RunDefinition& run) {
  auto n = [](long long v) { return std::to_string(v); };
  // Refuses a world size that cannot keep the global batch.
  const StepShape shape = resumed_step_shape(c, path, run);
  auto differences = run_differences(c, run);
  // The global batch is kept: the per-rank batch and the accumulation follow
  // from it, whatever the batch options say. (per-rank: they must be the
  // writing run's, as every other run-defining option.)
  if (run.elastic_batch == ElasticBatch::Global && shape.global_batch() == written_shape(c).global_batch())
    differences.erase(std::remove_if(differences.begin(), differences.end(), is_batch_option), differences.end());
  if (!differences.empty()) {
    using boost::adaptors::transformed;
    const std::string listed = boost::algorithm::join(
        differences |
            transformed([](const auto& d) { return "--" + d.key + " " + d.saved + " there, " + d.now + " here"; }),
        "; ");
    const std::string fix = boost::algorithm::join(
        differences | transformed([](const auto& d) { return "--" + d.key + " " + d.saved; }), " ");
    throw CheckpointError(checkpoint_message(path, " was written by a different run: " + listed +
                                                       ". It cannot continue that run; pass the checkpoint's values (" +
                                                       fix + ")" + kNewRunHint));
  }
  if (!c.run.data_identity.empty() && c.run.data_identity != run.data_identity)
    throw CheckpointError(mismatch(path, "training data of", c.run.data_identity,
                                   run.data_identity + " (--data " + run.data_path + ")", "pass the same --data"));
  if (c.run.train_size != run.train_size)
    throw CheckpointError(mismatch(path, "a training split of", n(c.run.train_size) + " samples",
                                   n(run.train_size) + " samples in " + run.data_path, "pass the same --data"));
}

std::string position_problem(const TrainingPosition& p, const RunPlan& plan, bool check_step) {
  // batch == batches_per_epoch is an epoch's last step done but its end not
  // yet reached: a checkpoint written at that step boundary (preemption,
  // --checkpoint-every-steps) holds it, and the resumed run ends the epoch.
  if (p.epoch < 0 || p.batch_in_epoch < 0 || p.batch_in_epoch > plan.batches_per_epoch || p.step < 0)
    return strprintf("holds the position epoch %d, batch %ld, step %ld, outside a run of %ld batches per epoch",
                     p.epoch, p.batch_in_epoch, p.step, plan.batches_per_epoch);
  const bool epoch_done = p.batch_in_epoch == plan.batches_per_epoch;
  if (!epoch_done && p.batch_in_epoch % plan.accumulate != 0)
    return strprintf("holds batch %ld, not the end of an optimiser step of %d batches", p.batch_in_epoch,
                     plan.accumulate);
  const long steps_in_epoch = epoch_done ? plan.steps_per_epoch : p.batch_in_epoch / plan.accumulate;
  const long expected = static_cast<long>(p.epoch) * plan.steps_per_epoch + steps_in_epoch;
  if (check_step && p.step != expected)
    return strprintf("holds step %ld, but epoch %d, batch %ld is step %ld of this run", p.step, p.epoch,
                     p.batch_in_epoch, expected);
  return "";
}

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

TrainingPosition continued_position(const Checkpoint& c, const std::string& path, const RunPlan& plan, int world_size,
                                    bool drop_last, long max_steps) {
  const TrainingPosition& p = c.position;
  const int64_t end = epoch_end(c.run.train_size, p.order_world_size, p.order_batch_size, drop_last);
  // The position as its writer reached it: a step boundary of its epoch (in
  // its micro-batches, from its origin), and for a run of one shape
  // throughout that is this run's too, the step count of its epoch and batch.
  const StepShape written = written_shape(c);
  RunPlan writers = plan;
  writers.batch_size = c.run.batch_size;
  writers.accumulate = c.run.accumulate;
  writers.batches_per_epoch =
      static_cast<long>(ceil_div(std::max<int64_t>(end - p.batch_origin, 0), written.micro_batch()));
  writers.steps_per_epoch = static_cast<long>(ceil_div(writers.batches_per_epoch, c.run.accumulate));
  const bool writers_own_epoch =
      p.order_world_size == c.run.world_size && p.order_batch_size == c.run.batch_size && p.batch_origin == 0;
  const StepShape shape{plan.batch_size, world_size, plan.accumulate};
  const bool one_shape = !c.run.reshaped && writers_own_epoch && shape == written;
  if (const std::string why = position_problem(p, writers, one_shape); !why.empty())
    throw CheckpointError(checkpoint_message(path, " " + why + " (a damaged file?); resume from another checkpoint"));

  const int64_t position = c.global_position;
  TrainingPosition q{p.epoch, 0, p.step};
  // The epoch's last step done, its end not yet reached: the run ends it.
  if (position >= end) {
    q.batch_in_epoch = plan.batches_per_epoch;
    return q;
  }
  const bool own_order = p.order_world_size == world_size && p.order_batch_size == plan.batch_size;
  if (position == 0 || (own_order && position % shape.global_batch() == 0)) {
    q.batch_in_epoch = static_cast<long>(position / shape.micro_batch());
    return q;
  }
  q.order_world_size = p.order_world_size;
  q.order_batch_size = p.order_batch_size;
  q.batch_origin = position % shape.global_batch();
  q.batch_in_epoch = static_cast<long>((position - q.batch_origin) / shape.micro_batch());
  // Full micro-batches divide among the ranks; the rest's last one may be
  // short. Micro-batch k from here is in step k / accumulate from here (the
  // origin puts the position on a step boundary): the short one, after the
  // full ones, matters only if --max-steps leaves the run that far.
  const int64_t last = (end - position) % shape.micro_batch();
  const int64_t steps_before_short = (end - position) / shape.micro_batch() / shape.accumulate;
  const bool reached = max_steps <= 0 || max_steps - p.step > steps_before_short;
  if (reached && last % world_size != 0)
    throw CheckpointError(
        checkpoint_message(path, strprintf(": the rest of epoch %d (positions [%lld, %lld) of its "
                                           "order) ends with a micro-batch of %lld samples, which "
                                           "do not divide among %d ranks; resume on a world size "
                                           "that divides it",
                                           p.epoch, static_cast<long long>(position), static_cast<long long>(end),
                                           static_cast<long long>(last), world_size)) +
        kNewRunHint);
  return q;
}

double lr_scale(const RunDefinition& run) {
  const StepShape shape{run.batch_size, run.world_size, run.accumulate};
  return static_cast<double>(shape.global_batch()) / static_cast<double>(run.lr_global_batch);
}

std::string elastic_resume_note(const Checkpoint& c, const RunDefinition& run, const OptimConfig& optim) {
  const double lr = optim.lr;
  const StepShape written = written_shape(c), shape{run.batch_size, run.world_size, run.accumulate};
  if (shape == written) return "";
  auto on = [](const StepShape& s) {
    return strprintf("%d rank(s) with %d per rank", s.world_size, s.batch_size) +
           (s.accumulate == 1 ? "" : strprintf(" x %d micro-batches", s.accumulate));
  };
  std::string note = "elastic resume: written on " + on(written) + ", continued on " + on(shape);
  if (shape.accumulate != written.accumulate) note += " (gradient accumulation)";
  const auto global = [](const StepShape& s) { return static_cast<long long>(s.global_batch()); };
  if (shape.global_batch() == written.global_batch())
    note += strprintf(": the same global batch of %lld per optimiser step", global(shape));
  else
    note +=
        strprintf(": the global batch per optimiser step changes from %lld to %lld", global(written), global(shape));
  note += strprintf(" (--elastic-batch %s)", to_string(run.elastic_batch));
  if (lr_scale(run) != 1.0)
    note += strprintf("; the learning rate follows it (linear scaling): --lr %g x %lld/%lld = %g", lr, global(shape),
                      static_cast<long long>(run.lr_global_batch), lr * lr_scale(run));
  // Muon's rate is a multiple of --lr's (optim/optimizer.cpp): it follows too.
  if (lr_scale(run) != 1.0 && optim.optimizer == "muon")
    note += strprintf(", and --muon-lr %g x %lld/%lld = %g", optim.muon_lr, global(shape),
                      static_cast<long long>(run.lr_global_batch), optim.muon_lr * lr_scale(run));
  if (c.position.batch_in_epoch > 0)
    note += strprintf("; the rest of epoch %d (from its global position %lld) is re-sharded among the %d ranks",
                      c.position.epoch, static_cast<long long>(c.global_position), run.world_size);
  return note;
}

std::string skipping_note(const std::string& why, const std::vector<std::string>& newest_first,
                          const std::string& skipped) {
  const auto it = std::find(newest_first.begin(), newest_first.end(), skipped);
  const bool older = it != newest_first.end() && it + 1 != newest_first.end();
  return "skipping " + why +
         (older ? "; --resume auto tries the older checkpoint " + *(it + 1) + " instead"
                : std::string("; no older checkpoint is left"));
}

std::vector<std::string> length_dependent_parts(const std::vector<std::string>& config_lines) {
  const auto values = config_values(config_lines);
  auto value = [&](const char* key) {
    const auto it = values.find(key);
    return it == values.end() ? std::string() : it->second;
  };
  std::vector<std::string> parts;
  const std::string schedule = value("schedule");
  if (!schedule.empty() && schedule != to_string(ScheduleKind::Constant))
    parts.push_back("the " + schedule + " schedule");
  if (!value("lr-tail-epochs").empty() && value("lr-tail-epochs") != "0") parts.emplace_back("the low-rate tail");
  if (!value("lookahead-every").empty() && value("lookahead-every") != "0") parts.emplace_back("lookahead's decay");
  if (value("optimizer") == "muon") parts.emplace_back("Muon's progress (its target magnitude and rescale period)");
  return parts;
}

std::string length_change_note(const Checkpoint& c, const RunDefinition& run) {
  const auto saved = config_values(c.run.config), now = config_values(run.config);
  auto value = [](const std::map<std::string, std::string>& m, const char* key) {
    const auto it = m.find(key);
    return it == m.end() ? std::string("?") : it->second;
  };
  const std::string before = "--epochs " + value(saved, "epochs") + " --max-steps " + value(saved, "max-steps");
  const std::string after = "--epochs " + value(now, "epochs") + " --max-steps " + value(now, "max-steps");
  // The parts are run-defining options (the same on both sides): the run's own.
  const auto parts = length_dependent_parts(run.config);
  if (parts.empty() || before == after) return "";
  std::string named = parts.front();
  for (size_t i = 1; i < parts.size(); ++i) named += (i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return "the run's length changes from " + before + " to " + after + ", and " + named +
         (parts.size() == 1 ? " depends" : " depend") +
         " on it: from the resumed step on, the run follows the new length, so the result differs from both "
         "uninterrupted runs";
}

RunPlan resumed_plan(const std::string& path, const RunDefinition& run, const RunPlan& plan, const RunConfig& config,
                     int64_t train_size, int world_size) {
  if (run.batch_size == plan.batch_size && run.accumulate == plan.accumulate) return plan;
  // The graph holds one whole optimiser step (cuda_graphs_refusal refuses --accumulate for it).
  if (config.runtime.cuda_graphs && run.accumulate != 1)
    throw ConfigError(checkpoint_message(
        path, strprintf(" continues on %d ranks with %d per rank x %d micro-batches, and --cuda-graphs true needs "
                        "whole steps of one micro-batch: resume with --cuda-graphs false, or on a world size that "
                        "divides the global micro-batch",
                        world_size, run.batch_size, run.accumulate)));
  TrainingConfig training = config.training;
  training.batch_size = run.batch_size;
  training.global_batch_size = 0;
  training.accumulate = run.accumulate;
  return make_run_plan(train_size, world_size, training, config.data.drop_last, config.optim.warmup_epochs);
}

long steps_of_reshaped_run(const RunPlan& plan, const TrainingPosition& position, const RunConfig& config,
                           int64_t train_size, int world_size, int rank) {
  const long batches = EpochShard(config.data, train_size, world_size, rank, plan.batch_size, position).batches();
  const long left_in_epoch =
      position.epoch < plan.epochs ? (batches - position.batch_in_epoch + plan.accumulate - 1) / plan.accumulate : 0;
  const long later_epochs = std::max(0, plan.epochs - position.epoch - 1);
  const long total = position.step + std::max(0L, left_in_epoch) + later_epochs * plan.steps_per_epoch;
  return config.training.max_steps > 0 ? std::min(total, config.training.max_steps) : total;
}

}  // namespace cifar
