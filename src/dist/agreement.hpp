// Collective error agreement for start-up checks (configuration, data files,
// world-dependent limits). Every rank runs the check; if any rank fails, all
// ranks learn it, the lowest failing rank prints its one message, and every
// rank leaves through StartupFailure with the same exit code — a clean exit
// instead of an MPI_Abort, and no rank left waiting.
#pragma once

#include <mpi.h>

#include <functional>
#include <stdexcept>

namespace cifar {

class StartupFailure : public std::runtime_error {
 public:
  StartupFailure(int exit_code, bool reported)
      : std::runtime_error("start-up failed"), exit_code_(exit_code), reported_(reported) {}
  int exit_code() const noexcept { return exit_code_; }
  bool reported() const noexcept { return reported_; }

 private:
  int exit_code_;
  bool reported_;
};

// Runs `check` on every rank of `comm`; throws StartupFailure on all ranks if
// it threw a cifar::Error on any.
void agree_on_startup(MPI_Comm comm, const std::function<void()>& check);

}  // namespace cifar
