// `cifar_mpi --check-env`: the counterpart of the recipe's nvidia-smi /
// torch.cuda.is_available() step. Prints one line per rank (in rank order)
// and, once, every version and setting that decides whether and how fast
// training will run. Returns 0 when the world can train with the requested
// backend, 1 (with the reason) when it cannot.
#pragma once

#include <string>

#include "config/choices.hpp"
#include "mpi/mpi_env.hpp"

namespace cifar {
int run_check_env(const MpiEnvironment& env, const std::string& backend, DeviceRequest device);
// Cores this process may run on, as a list like "0-3,8".
std::string bound_cores();
}  // namespace cifar
