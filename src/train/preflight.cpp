// Start-up checks shared by the Trainer and --check-env (see startup_checks.hpp).
#include "train/preflight.hpp"

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

}  // namespace cifar
