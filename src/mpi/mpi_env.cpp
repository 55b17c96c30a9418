// MPI start-up and tear-down (RAII), with the thread level checked.
#include "mpi/mpi_env.hpp"

#include <cstdlib>

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {

namespace {
const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "unknown";
  }
}
}  // namespace

MPI_Comm duplicate_comm(MPI_Comm comm) {
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_dup(comm, &dup));
  MPI_CHECK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
  return dup;
}

MpiEnvironment::MpiEnvironment(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) throw Error("MPI was already initialised: create exactly one MpiEnvironment");
  // Ranks often own one core each, shared by the compute threads and our
  // communication thread. Open MPI's progress loop spins while a collective
  // waits; yielding lets backward keep the core (measured: 1,850 -> 2,130
  // img/s at np 2 on 2 cores). A user's own setting wins (overwrite = 0).
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  int provided = MPI_THREAD_SINGLE;
  const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) {
    throw LibraryError("MPI_Init_thread failed: " + detail::mpi_error_text(rc) +
                       " (is the program started by mpirun or srun --mpi=pmix?)");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_MULTIPLE) {
    // Not an exception: the throw would reach main(), whose handler needs the world.
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
      log::error(
          strprintf("the MPI library provides only %s, but cifar_mpi needs MPI_THREAD_MULTIPLE "
                    "(gradients are reduced from a communication thread). Use an MPI built with "
                    "thread support (Open MPI: --enable-mpi-thread-multiple).",
                    thread_level_name(provided)));
    }
    abort_job(kExitFailure);
  }
  comm_ = duplicate_comm(MPI_COMM_WORLD);
  world_ = discover_world(comm_);
  set_process_identity(world_.rank, world_.size, world_.host);
}

MpiEnvironment::~MpiEnvironment() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiEnvironment::abort_job(int exit_code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace cifar
