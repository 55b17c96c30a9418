// Start-up checks shared by the Trainer and --check-env (see preflight.hpp).
#include "train/preflight.hpp"

#include <cstdlib>

#include "checkpoint/checkpointer.hpp"
#include "gpu/cuda_runtime.hpp"
#include "outputs/checkpoint_files.hpp"
#include "placement/node_probe.hpp"
#include "step/cuda_graph_step.hpp"
#include "util/error.hpp"

namespace cifar {

void check_device_settings(const RunConfig& config, const Placement& placement) {
  if (config.training.precision == Precision::Fp16 && !placement.device.is_cuda())
    throw ConfigError("--precision fp16 needs a GPU (--device cuda); CPUs train in fp32 or bf16");
  const std::string no_graphs = cuda_graphs_refusal(config, placement.device, placement.backend);
  if (!no_graphs.empty()) throw ConfigError(no_graphs);
}

RunPlan plan_for_data(const RunConfig& config, int64_t train_samples, int world_size) {
  if (train_samples < world_size) {
    throw ConfigError(
        strprintf("%s has %lld training samples but the job has %d ranks: every rank needs at least "
                  "one sample; use fewer ranks",
                  config.data.path.c_str(), static_cast<long long>(train_samples), world_size));
  }
  return make_run_plan(train_samples, world_size, config.training, config.data.drop_last, config.optim.warmup_epochs);
}

namespace {

int64_t state_bytes(Model& model) {
  int64_t bytes = 0;
  for (const auto& entry : state_entries(model)) bytes += static_cast<int64_t>(entry.second.nbytes());
  return bytes;
}

}  // namespace

std::string cpu_fallback_note(const RunConfig& config, const Placement& placement) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (config.runtime.device != DeviceRequest::Auto || placement.device.is_cuda() || !visible) return "";
  std::string why;
  if (gpu::compiled()) gpu::device_count(&why);
  return std::string("--device auto: no usable GPU here (CUDA_VISIBLE_DEVICES=") + visible +
         (why.empty() ? "" : "; " + why) + "): training on the CPU";
}

std::vector<NodeFailure> probe_node_launch(const RunConfig& config, const World& world) {
  return check_node(probe_launch_facts(config, world));
}

int64_t checkpoint_bytes_estimate(const RunConfig& config, int64_t model_state_bytes) {
  const int64_t optimizer_slots = config.optim.optimizer == "adam" ? 2 : 1;
  const int64_t lookahead = config.optim.lookahead_every > 0 ? 1 : 0;
  return model_state_bytes * (1 + optimizer_slots + lookahead) + (64 << 10);
}

std::vector<NodeFailure> probe_node_resources(const RunConfig& config, const World& world, const Placement& placement,
                                              Model& model, const RunPlan& plan) {
  ResourceNeeds needs;
  if (writes_checkpoints(config, world)) {  // only the writing rank's space is checked
    needs.model_state_bytes = state_bytes(model);
    needs.checkpoint_bytes = checkpoint_bytes_estimate(config, needs.model_state_bytes);
    needs.max_writes = checkpoint_writes(config.checkpoint, plan);
    needs.existing_checkpoints = static_cast<int>(list_checkpoints(config.checkpoint.dir).size());
  }
  return check_node(probe_resource_facts(config, world, placement.backend, needs));
}

}  // namespace cifar
