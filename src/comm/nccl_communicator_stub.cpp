// NCCL stand-in for builds without CUDA/NCCL: says so, never crashes.
#include "comm/nccl_communicator.hpp"

#include "util/error.hpp"

namespace cifar {
namespace {
[[noreturn]] void not_compiled() {
  throw ConfigError(
      "NCCL support was not compiled into this build (CUDA toolkit or NCCL not found at configure "
      "time; set NCCL_ROOT and reconfigure). Use --backend mpi.");
}
}  // namespace

NcclUniqueIdBytes broadcast_nccl_unique_id(MPI_Comm) { not_compiled(); }
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm, int, std::chrono::milliseconds) { not_compiled(); }

}  // namespace cifar
