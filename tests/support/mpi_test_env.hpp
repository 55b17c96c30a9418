// Access to the MPI environment of an MPI GoogleTest binary.
#pragma once

#include "mpi/mpi_env.hpp"

namespace cifar::test {
extern MpiEnvironment* g_env;
inline const MpiEnvironment& env() { return *g_env; }
}  // namespace cifar::test
