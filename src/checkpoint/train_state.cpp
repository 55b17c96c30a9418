// Capturing and restoring a run's state (see train_state.hpp).
#include "checkpoint/train_state.hpp"

#include <vector>

#include "checkpoint/messages.hpp"
#include "optim/optimizer_state.hpp"
#include "outputs/model_file.hpp"
#include "process/rng_state.hpp"

namespace cifar {
namespace {

// Calls `f` on each stateful part of `state`, in the order of the file.
template <typename F>
void for_each_part(const TrainState& state, F&& f) {
  OptimizerState optimizer(state.optimizer, state.device);
  DefaultGenerators generators(state.device);
  std::vector<Stateful*> parts{&optimizer, &state.scaler};
  if (state.lookahead) parts.push_back(state.lookahead);
  parts.push_back(&generators);
  for (Stateful* part : parts) f(*part);
}

}  // namespace

Checkpoint capture_checkpoint(const StoredRunDefinition& run, const TrainingPosition& position, double epoch_loss_sum,
                              double epoch_loss_count, const TrainState& state, const RunTotals& totals) {
  Checkpoint c;
  c.run = run;
  c.position = position;
  if (c.position.order_world_size == 0)
    c.position = {position.epoch, position.batch_in_epoch, position.step, run.world_size, run.batch_size, 0};
  c.global_position =
      c.position.batch_origin + static_cast<int64_t>(position.batch_in_epoch) * run.batch_size * run.world_size;
  c.epoch_loss_sum = epoch_loss_sum;
  c.epoch_loss_count = epoch_loss_count;
  c.model_state = c10::IValue(cpu_state_dict(state.model));
  for_each_part(state, [&](Stateful& part) { part.save_state(c.parts); });
  c.skipped_steps = state.skipped_steps ? *state.skipped_steps : 0;
  c.totals = totals;
  return c;
}

void restore_checkpoint(const Checkpoint& c, const std::string& path, TrainState& state) {
  apply_state_dict(state.model, c.model_state.toGenericDict(), path);
  for_each_part(state, [&](Stateful& part) {
    try {
      part.restore_state(c.parts);
    } catch (const std::exception& e) {
      throw unusable_checkpoint(path, ": " + error_text(e));
    }
  });
}

}  // namespace cifar
