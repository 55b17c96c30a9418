// The start-up checks that decide whether a run can begin, beyond the
// configuration's own validation (config/run_config.hpp) and the outputs'
// (outputs/run_outputs.hpp). The Trainer runs them before training and
// `--check-env` runs the same functions, so a pre-flight check fails exactly
// where the job would.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/backends.hpp"
#include "config/run_config.hpp"
#include "model/model.hpp"
#include "mpi/world.hpp"
#include "placement/node_checks.hpp"
#include "step/run_plan.hpp"

namespace cifar {

// What the configuration asks of the device: ConfigError for --precision
// fp16 or --cuda-graphs where the placement cannot honour them.
void check_device_settings(const RunConfig& config, const Placement& placement);

// The run's plan for a training split of `train_samples` on `world_size`
// ranks; ConfigError when a rank would have no sample or no batch.
RunPlan plan_for_data(const RunConfig& config, int64_t train_samples, int world_size);

// With --device auto on the CPU where CUDA_VISIBLE_DEVICES is set, why no
// GPU is used (for rank 0 to say); "" otherwise.
std::string cpu_fallback_note(const RunConfig& config, const Placement& placement);

// The node checks (placement/node_checks.hpp) on this rank's live node, in
// two steps; placement/node_probe.hpp reads the node, and these add what
// only the floors above it know (the model, the plan, the checkpoints).
// Before the placement: the launcher's task count against the world size,
// and with --device cuda, where the driver runs this build, the GPUs the
// launcher gave this rank against those CUDA can use (a GPU gone bad is the
// node's failure, not a configuration error; placement/visible_devices.hpp).
std::vector<NodeFailure> probe_node_launch(const RunConfig& config, const World& world);
// Once the placement, the plan and the model are known: free space for the
// checkpoints the run keeps and its model file (on rank 0, which writes
// them; the checkpoints `plan` writes, checkpoint_writes()) and /dev/shm for NCCL.
std::vector<NodeFailure> probe_node_resources(const RunConfig& config, const World& world, const Placement& placement,
                                              Model& model, const RunPlan& plan);
// One checkpoint's bytes: the model's state, the optimiser's state (two
// moments for Adam, a momentum buffer otherwise), the lookahead's copy, and
// 64 KiB for the rest (the default model and Adam: 3.70 MiB estimated, 3.64
// MiB written).
int64_t checkpoint_bytes_estimate(const RunConfig& config, int64_t model_state_bytes);

}  // namespace cifar
