// The one place a backend is turned into a Communicator.
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>

#include "comm/communicator.hpp"
#include "dist/device.hpp"

namespace cifar {

std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, const Placement& placement,
                                                std::chrono::milliseconds timeout);

}  // namespace cifar
