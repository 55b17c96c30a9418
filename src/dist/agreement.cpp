// Start-up error agreement: one allreduce of (failed, lowest failing rank, code).
#include "dist/agreement.hpp"

#include <climits>

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {

void agree_on_startup(MPI_Comm comm, const std::function<void()>& check) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  std::string message;
  int exit_code = kExitOk;
  try {
    check();
  } catch (const Error& e) {
    message = e.what();
    exit_code = e.exit_code();
  }
  // Lowest failing rank, and its exit code, agreed by all.
  int mine[2] = {exit_code != kExitOk ? rank : INT_MAX, exit_code};
  int lowest[2] = {INT_MAX, 0};
  MPI_CHECK(MPI_Allreduce(mine, lowest, 1, MPI_2INT, MPI_MINLOC, comm));
  if (lowest[0] == INT_MAX) return;
  const bool reporter = rank == lowest[0];
  if (reporter) log::error(message);
  throw StartupFailure(lowest[1], reporter);
}

}  // namespace cifar
