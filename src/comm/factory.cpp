// Backend selection: MPI or NCCL behind the Communicator interface.
#include "comm/factory.hpp"

#include "comm/mpi_communicator.hpp"
#include "comm/nccl_communicator.hpp"

namespace cifar {

std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, const Placement& placement,
                                                std::chrono::milliseconds timeout) {
  std::unique_ptr<Communicator> c;
  if (placement.backend == Backend::Nccl) {
    c = make_nccl_communicator(comm, placement.device.index(), timeout);
  } else {
    c = std::make_unique<MpiCommunicator>(comm);
    c->set_timeout(timeout);
  }
  return c;
}

}  // namespace cifar
