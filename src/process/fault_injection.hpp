// FaultInjector: TEST-ONLY. A failure of one rank on demand, for the tests of
// how a job ends when one rank fails (tests/robustness/rank_fault.sh,
// docs/dev/faults.md). With the environment variable
//
//   CIFAR_FAULT_INJECT=rank=R,step=S[,kind=throw|usr1]
//
// rank R throws an Error as optimiser step S (0-based) begins, as a failed
// CUDA or NCCL call, or a GPU out of memory, would on that rank alone; with
// kind=usr1 it raises SIGUSR1 instead, a scheduler's signal arriving at that
// moment: the run checkpoints at that step's end and stops (exit code 3).
// Unset (always, outside the tests) it costs one comparison per step; there
// is no command-line option on purpose.
//
// At start-up (tests/robustness/startup_faults.sh, tests/slurm/test_startup_faults.sh), with
//
//   CIFAR_STARTUP_FAULT=rank=R,stage=NAME,kind=exit|stall
//
// rank R exits (code 1) or stalls for good as it enters start-up stage NAME
// (process/startup_deadline.hpp: "MPI start", before MPI_Init, "options", or
// a stage of train/startup.hpp; '-' may stand for a space): a rank that dies
// before MPI starts, or hangs before the first collective.
#pragma once

#include <string>

namespace cifar {

class FaultInjector {
 public:
  FaultInjector() = default;  // no fault
  // Reads CIFAR_FAULT_INJECT; throws ConfigError naming the variable when it
  // is set but malformed.
  explicit FaultInjector(int rank);
  // `text` instead of the variable's value.
  FaultInjector(int rank, const std::string& text);
  // Throws the injected failure when this rank's fault is at `step`.
  void at_step(long step) const;

 private:
  int rank_ = 0;
  long step_ = -1;       // -1: no fault on this rank
  bool signal_ = false;  // kind=usr1
};

struct StartupFault {
  int rank = -1;  // -1: none
  std::string stage;
  bool stall = false;  // kind=stall; else kind=exit
};

// Reads CIFAR_STARTUP_FAULT (none when unset); throws ConfigError naming the
// variable when it is malformed.
StartupFault startup_fault_from_environment();
StartupFault parse_startup_fault(const std::string& text);
// Exits or stalls when `fault` is this rank's at `stage`.
void strike_startup_fault(const StartupFault& fault, int rank, const std::string& stage);

}  // namespace cifar
