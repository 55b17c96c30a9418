// The one top-level frame for every MPI program of the project (cifar_mpi,
// allreduce_bench, ...): starts MPI, runs `body`, and is the only place that
// catches. A start-up failure agreed by all ranks exits cleanly with its code;
// any other failure is logged once by the rank that met it and ends the whole
// job (MPI_Abort), so no rank is left waiting.
#pragma once

#include <exception>
#include <functional>
#include <string>

#include "mpi/mpi_env.hpp"
#include "util/error.hpp"

namespace cifar {
int run_mpi_main(int argc, char** argv, const std::function<int(MpiEnvironment& env, int argc, char** argv)>& body);

// Ends the whole job for a failure of this rank alone: logs where the rank
// was (`context`, "" when unknown) and the cause, then MPI_Abort with the
// failure's exit code (an Error's own, else 1). Never returns.
[[noreturn]] void end_job_for(const std::exception& failure, const std::string& context);

// Runs `body`. A failure of this rank alone ends the job there (end_job_for),
// while the caller's objects still live: unwinding them first could block
// for good and hide the cause, since a communicator's teardown waits for the
// other ranks (ncclCommDestroy is collective), which wait in a collective of
// their own. `let_go` runs first: what the rank must not leave behind and
// can give up without waiting for anyone (rank 0's output locks, the empty
// folders it made). A failure every rank agreed on (AgreedFailure) passes
// on, so every rank leaves cleanly.
template <typename Body>
decltype(auto) end_job_on_failure(Body&& body, const std::function<std::string()>& context,
                                  const std::function<void()>& let_go = {}) {
  try {
    return body();
  } catch (const AgreedFailure&) {
    throw;
  } catch (const std::exception& e) {
    if (let_go) let_go();
    end_job_for(e, context());
  }
}
}  // namespace cifar
