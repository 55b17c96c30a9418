// A child program run to its end under a time limit, its output in a log
// file: for work that may kill the process it runs in (a sticky CUDA error,
// a "symbol lookup error" from the loader, a segfault), so that the parent
// lives on to report it. The child is started with posix_spawn (no copy of
// the parent's pages, as fork would make of an MPI process's registered
// memory), in a process group of its own, which the time limit kills whole.
#pragma once

#include <string>
#include <vector>

namespace cifar {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0]: the program's path
  std::vector<std::string> env;   // the whole environment, "NAME=value" each
  std::string log;                // stdout and stderr, created or truncated; stdin is /dev/null
  double time_limit_s = 60;       // then the process group is killed (SIGKILL)
};

struct ChildOutcome {
  int exit_code = -1;  // the exit status, when it exited
  int signal = 0;      // the signal that ended it, 0 when it exited
  bool timed_out = false;
  std::string start_error;  // why it could not start; "" when it started
  double seconds = 0;
  bool ok() const { return start_error.empty() && !timed_out && signal == 0 && exit_code == 0; }
  // "exit code 1", "killed by signal 11 (Segmentation fault)", "timed out after 60 s", "cannot start PATH: ..."
  std::string text() const;
};

// Runs `spec` to its end or its time limit. Never throws for what the child
// does; the outcome says it.
ChildOutcome run_child(const ChildSpec& spec);

// This process's environment, "NAME=value" each, without the variables
// `drop` names.
std::vector<std::string> environment_without(bool (*drop)(const std::string& name));

// Whether NAME is a variable a launcher gives each rank of its job (Open
// MPI's OMPI_*, PMIx's PMIX_*, PMI's PMI_*, MPICH's HYDRA_* and MPI_LOCAL*,
// and Slurm's per-step and per-task SLURM_* ones). A program started from a
// rank without them starts MPI as a world of its own (a singleton); with
// them it would claim the rank's place in the job. Open MPI's
// OMPI_ALLOW_RUN_AS_ROOT* are kept: they are the user's, not the launcher's.
bool is_launcher_variable(const std::string& name);

}  // namespace cifar
