// The start-up checks that decide whether a run can begin, beyond the
// configuration's own validation (config/run_config.hpp) and the outputs'
// (outputs/run_outputs.hpp). The Trainer runs them before training and
// `--check-env` runs the same functions, so a pre-flight check fails exactly
// where the job would.
#pragma once

#include <cstdint>

#include "comm/backends.hpp"
#include "config/run_config.hpp"
#include "step/run_plan.hpp"

namespace cifar {

// What the configuration asks of the device: ConfigError for --precision
// fp16 or --cuda-graphs where the placement cannot honour them.
void check_device_settings(const RunConfig& config, const Placement& placement);

// The run's plan for a training split of `train_samples` on `world_size`
// ranks; ConfigError when a rank would have no sample or no batch.
RunPlan plan_for_data(const RunConfig& config, int64_t train_samples, int world_size);

}  // namespace cifar
