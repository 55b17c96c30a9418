// `cifar_mpi --check-env`: the counterpart of the PyTorch DDP recipe's nvidia-smi /
// torch.cuda.is_available() step. Prints one line per rank (in rank order)
// and, once, every version and setting that decides whether and how fast
// training will run, then a warning with its fix for each placement problem
// (placement/placement_rules.hpp). Then it runs training's start-up checks
// (train/preflight.hpp, the outputs without creating anything, the data
// file's header and checksum): a problem there ends every rank with
// training's message and exit code (AgreedFailure), as the run would.
// Returns 0 when the world can train with the requested backend, 1 (with
// the reason) when it cannot, and 1 when config.strict is set and there is
// any warning.
#pragma once

#include "config/run_config.hpp"
#include "mpi/mpi_env.hpp"

namespace cifar {
int run_check_env(const MpiEnvironment& env, const RunConfig& config);
}  // namespace cifar
