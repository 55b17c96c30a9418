// The training program: from a validated TrainConfig and a running MPI
// world to a trained model file, metrics and a printed test accuracy — the
// C++ counterpart of the reference recipe's worker().
#pragma once

#include "config/train_config.hpp"
#include "dist/mpi_env.hpp"

namespace cifar {

// Returns the process exit code (kExitOk, or kExitPreempted after a
// checkpoint on SIGTERM/SIGUSR1). Throws on failure (main reports it).
int run_training(const MpiEnvironment& env, const TrainConfig& config);

}  // namespace cifar
