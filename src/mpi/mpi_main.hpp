// The one top-level frame for every MPI program of the project (cifar_mpi,
// allreduce_bench, ...): starts MPI, runs `body`, and is the only place that
// catches. A start-up failure agreed by all ranks exits cleanly with its code;
// any other failure is logged once by the rank that met it and ends the whole
// job (MPI_Abort), so no rank is left waiting.
#pragma once

#include <functional>

#include "mpi/mpi_env.hpp"

namespace cifar {
int run_mpi_main(int argc, char** argv, const std::function<int(MpiEnvironment& env, int argc, char** argv)>& body);
}  // namespace cifar
