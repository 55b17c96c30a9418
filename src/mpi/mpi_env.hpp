// The one place MPI starts and stops. An MpiEnvironment lives at the top of
// main(); it initialises MPI with MPI_THREAD_MULTIPLE (the gradient reducer
// runs collectives from a communication thread while the main thread computes),
// makes a private duplicate of MPI_COMM_WORLD so that no library sharing the
// process can mix messages with ours, and discovers the World.
#pragma once

#include <mpi.h>

#include "mpi/world.hpp"

namespace cifar {

class MpiEnvironment {
 public:
  MpiEnvironment(int* argc, char*** argv);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  const World& world() const { return world_; }
  // The private duplicate of MPI_COMM_WORLD (errors returned, not fatal).
  MPI_Comm comm() const { return comm_; }

  // Ends every rank of the job with `exit_code`. Safe to call from any thread
  // and before or after a failure; never returns.
  [[noreturn]] static void abort_job(int exit_code);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  World world_;
};

// A duplicate of `comm` whose errors are returned as codes to MPI_CHECK.
MPI_Comm duplicate_comm(MPI_Comm comm);

}  // namespace cifar
