// NcclCommunicator: collectives on CUDA tensors with NCCL, on a dedicated
// non-blocking stream ordered against LibTorch's compute stream with CUDA
// events. A watchdog thread polls every collective in flight and
// ncclCommGetAsyncError; past the timeout, on an asynchronous NCCL error or
// a device error on a collective's event, it reports the operation, its size
// and the rank and ends the job (a stalled GPU collective cannot be
// interrupted from the host any other way).
//
// Declared without NCCL or CUDA types so the rest of the program needs neither
// header; builds without NCCL link nccl_communicator_stub.cpp, whose functions
// throw "not compiled".
#pragma once

#include <mpi.h>

#include <array>
#include <chrono>
#include <memory>

#include "comm/communicator.hpp"

namespace cifar {

inline constexpr size_t kNcclUniqueIdBytes = 128;
using NcclUniqueIdBytes = std::array<char, kNcclUniqueIdBytes>;

// Rank 0 creates the NCCL unique id (no GPU needed) and MPI broadcasts it;
// then a barrier, so no rank starts ncclCommInitRank before all have the id.
NcclUniqueIdBytes broadcast_nccl_unique_id(MPI_Comm comm);

// Creates the NCCL communicator for this rank's GPU `device_index`. Fails at
// once, with a message suggesting --backend mpi, where no GPU is visible.
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, int device_index,
                                                     std::chrono::milliseconds timeout);

}  // namespace cifar
