// Compute threads per rank, decided from the run's options and the node
// alone. Several ranks on one node must not oversubscribe its cores: each
// rank takes the cores it is bound to (the launcher's binding), shared fairly
// among the ranks bound to the same cores.
//
// OpenBLAS (the linear layers' GEMMs) keeps its own pool, and its results
// depend on the pool's size: it splits each GEMM among its threads, and with
// 1, 2 or 3 threads the same fc1 product differs in the last bits. So the
// pool size decides the model's bits, and it must not come from a variable
// that a launcher or an image sets without the user knowing:
// OMP_NUM_THREADS (the job scripts, container images, torchrun and site
// profiles set it), OPENBLAS_NUM_THREADS and GOTO_NUM_THREADS are not read.
// --threads and --blas-threads choose the counts; they are in the logged
// configuration, so a run's model follows from what its log shows. The
// variables, where set, are named in the log line as not used.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "mpi/world.hpp"

namespace cifar {

// Everything the thread counts are decided from.
struct ThreadInputs {
  int threads_option = 0;       // --threads (0: automatic)
  int blas_threads_option = 0;  // --blas-threads (0: as --threads; -1: the PyTorch DDP recipe's count)
  int bound_cpus = 1;           // CPUs this process may run on (its affinity)
  int online_cpus = 1;          // the node's online CPUs
  int configured_cpus = 1;      // the node's configured CPUs (OpenBLAS's own default count)
  int local_ranks = 1;          // ranks on this node
  // Thread variables set in the environment, NAME=value: named in the log only.
  std::vector<std::string> thread_environment;
};

// A rank's two pool sizes, each with where it came from (for the log).
struct ThreadCounts {
  int intra_op = 1;
  std::string intra_op_source;
  int blas = 1;
  std::string blas_source;
  std::vector<std::string> unused_environment;  // NAME=value, not used
};

// The decision (pure: a table test checks it).
//   intra-op: --threads when positive; else the bound CPUs, or, when the
//             process is bound to every CPU (the launcher did not bind), the
//             node's CPUs shared among its ranks.
//   OpenBLAS: --blas-threads when positive; -1: the node's configured CPUs,
//             the pool OpenBLAS gives the PyTorch DDP recipe's unbound processes in their
//             default environment; 0: the intra-op count.
ThreadCounts decide_thread_counts(const ThreadInputs& in);
// This process's inputs: its options, its CPU affinity, the node's CPUs, the
// ranks on the node, and which thread variables are set.
ThreadInputs probe_thread_inputs(const RuntimeConfig& runtime, const World& world);
// "intra-op N (why), OpenBLAS M (why)[; not used: NAME=value ... (...)]".
std::string describe_thread_counts(const ThreadCounts& counts);

// Threads this rank should use when --threads is 0 (cifar_eval's default too).
int automatic_thread_count(const World& world);

// Sets LibTorch's intra-op pool to `threads` and, when OpenBLAS is the BLAS
// this process uses, OpenBLAS's pool to `blas_threads`.
void apply_thread_count(int threads, int blas_threads);
// The process-wide settings of a run: thread counts (--threads,
// --blas-threads), the memory policy (--retain-memory) and, on a GPU
// (`cuda`), cuDNN's autotuning and determinism (--deterministic). Returns
// the thread counts applied.
ThreadCounts configure_process(const RuntimeConfig& runtime, const World& world, bool cuda);

}  // namespace cifar
