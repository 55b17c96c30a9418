// Error types and check macros. Every failure the program can meet becomes one
// typed exception carrying a complete, user-facing message: where it happened
// (file:line, rank, host), what failed (the call), and the library's own text.
// Only run_mpi_main (mpi/mpi_main.hpp) catches: it logs once and ends the
// whole job.
#pragma once

#include <stdexcept>
#include <string>

namespace cifar {

// Process exit codes, documented in the README and docs/robustness.md. They
// fall in two classes for the job scripts (jobs/cifar_restart.sh): 1 and 4
// may pass with a restart (a dead rank, a lost host, a full disk freed);
// 2, 5 and 6 recur with the same command line and files, so nothing
// restarts them; 7 restarts without the nodes that failed their checks
// (placement/node_checks.hpp). 8 is --self-test's alone: it never trains a
// run, so no job script sees it.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;      // runtime failure (I/O, library, rank death): a restart may help
inline constexpr int kExitUsage = 2;        // bad configuration or command line
inline constexpr int kExitPreempted = 3;    // checkpointed after SIGTERM/SIGUSR1; requeue to resume
inline constexpr int kExitCommTimeout = 4;  // a collective stalled past --comm-timeout
inline constexpr int kExitDiverged = 5;     // a non-finite or exploded loss, gradient or result
inline constexpr int kExitBadInput = 6;     // an input file missing, damaged or not this run's: no restart fixes it
inline constexpr int kExitNodeCheck = 7;    // a node failed its checks before training: restart without it
inline constexpr int kExitSelfTest = 8;     // --self-test: a path failed on a rank (app/self_test.hpp)

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int exit_code = kExitFailure)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

// Bad command line or config file: exit code 2, detected before any training.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& m) : Error(m, kExitUsage) {}
};
// Missing, unreadable or invalid input data (HDF5 file, archive): exit code 6,
// as the same file gives the same verdict at every restart.
class DataError : public Error {
 public:
  explicit DataError(const std::string& m, int exit_code = kExitBadInput) : Error(m, exit_code) {}
};
// A checkpoint or model file that is missing, damaged or another run's, or a
// resume it cannot serve (another world size that cannot keep its batch):
// exit code 6, for the same reason.
class CheckpointError : public Error {
 public:
  explicit CheckpointError(const std::string& m, int exit_code = kExitBadInput) : Error(m, exit_code) {}
};
// A failing call into MPI, NCCL, CUDA or HDF5; the message carries the library's text.
class LibraryError : public Error {
 public:
  using Error::Error;
};
// A collective that did not complete within --comm-timeout.
class CommTimeout : public Error {
 public:
  explicit CommTimeout(const std::string& m) : Error(m, kExitCommTimeout) {}
};

// Training diverged: a non-finite gradient or parameters (--on-nonfinite
// stop), or a result past the limits of step/divergence.hpp.
class Diverged : public Error {
 public:
  explicit Diverged(const std::string& m) : Error(m, kExitDiverged) {}
};

// Thrown on every rank when a check failed on any (comm/agreement.hpp agrees
// on it); caught by run_mpi_main, which exits with the failing rank's code.
class AgreedFailure : public std::runtime_error {
 public:
  AgreedFailure(int exit_code, bool reported)
      : std::runtime_error("a check failed on some rank"), exit_code_(exit_code), reported_(reported) {}
  int exit_code() const noexcept { return exit_code_; }
  bool reported() const noexcept { return reported_; }  // by this rank

 private:
  int exit_code_;
  bool reported_;
};

// Identity of this process for messages: set once by the MPI bootstrap.
void set_process_identity(int rank, int world_size, const std::string& host);
// "[rank 1/4 host]", or "[host]" before MPI is up.
std::string process_tag();
int process_rank();  // -1 before the bootstrap

namespace detail {
[[noreturn]] void throw_library_error(const char* library, const std::string& library_text, const char* call,
                                      const char* file, int line);
std::string mpi_error_text(int code);
}  // namespace detail

}  // namespace cifar

// MPI calls return codes only on communicators whose error handler is
// MPI_ERRORS_RETURN; the bootstrap sets that on every communicator it creates.
#define MPI_CHECK(call)                                                                                            \
  do {                                                                                                             \
    int cifar_mpi_rc_ = (call);                                                                                    \
    if (cifar_mpi_rc_ != 0 /* MPI_SUCCESS */)                                                                      \
      ::cifar::detail::throw_library_error("MPI", ::cifar::detail::mpi_error_text(cifar_mpi_rc_), #call, __FILE__, \
                                           __LINE__);                                                              \
  } while (0)

// For checks on user input or invariants that must hold in release builds too.
#define CIFAR_CHECK(cond, ErrorType, message) \
  do {                                        \
    if (!(cond)) throw ErrorType(message);    \
  } while (0)
