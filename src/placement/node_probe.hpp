// The live side of the node checks (placement/node_checks.hpp): what this
// rank's node offers, read from the running node (free space and the kind of
// file system under the checkpoint folder, /dev/shm, the launcher's task
// count, the GPUs the launcher granted against those CUDA can use) into the
// NodeFacts the checks judge. What the run will ask of the node (the model's
// size, the checkpoints it writes) is worked out by the floors that know the
// model and the plan and handed in as ResourceNeeds; train/preflight.hpp
// does both for the Trainer and --check-env.
#pragma once

#include <cstdint>
#include <string>

#include "config/run_config.hpp"
#include "mpi/world.hpp"
#include "placement/node_checks.hpp"

namespace cifar {

// What the run needs of the node's file systems, from the floors above:
// only read on the rank that writes the checkpoints (writes_checkpoints).
struct ResourceNeeds {
  int64_t model_state_bytes = 0;  // the model's state: the model file's size
  int64_t checkpoint_bytes = -1;  // one checkpoint, estimated
  long max_writes = -1;           // checkpoint files the run writes at most; -1: unknown
  int existing_checkpoints = 0;   // checkpoints already in the folder
};

// Whether this rank writes the run's checkpoints and its model file: rank 0,
// when the run keeps checkpoints. Only that rank's space is checked.
bool writes_checkpoints(const RunConfig& config, const World& world);

// Before the placement: the launcher's task count against the world size,
// and with --device cuda, where the driver runs this build, the GPUs the
// launcher gave this rank against those CUDA can use (a GPU gone bad is the
// node's failure, not a configuration error; placement/visible_devices.hpp).
NodeFacts probe_launch_facts(const RunConfig& config, const World& world);

// Once the placement (its backend's registered name, `backend`) and the
// needs are known: free space for the checkpoints the run keeps and its
// model file (on the rank that writes them), and /dev/shm for NCCL with
// more than one rank on the node.
NodeFacts probe_resource_facts(const RunConfig& config, const World& world, const std::string& backend,
                               const ResourceNeeds& needs);

}  // namespace cifar
