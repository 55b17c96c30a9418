// Compute threads per rank. Several ranks on one node must not oversubscribe
// its cores: each rank takes the cores it is bound to (the launcher's
// binding), shared fairly among the ranks bound to the same cores.
//
// OpenBLAS (the linear layers' GEMMs) keeps its own pool, and its results
// depend on the pool's size: it splits each GEMM among its threads, and with
// 1, 2 or 3 threads the same fc1 product differs in the last bits. For the
// recipe's numbers (--blas-threads -1), a rank's pool has the size OpenBLAS
// gives the recipe's processes (started by torch.multiprocessing, not bound).
#pragma once

#include "config/run_config.hpp"
#include "mpi/world.hpp"

namespace cifar {

// Threads this rank should use when --threads is 0.
int automatic_thread_count(const World& world);
// LibTorch's intra-op threads for --threads `option`: itself when positive,
// else automatic_thread_count. Training applies it; --check-env judges it.
int intra_op_thread_count(int option, const World& world);

// OpenBLAS threads for --blas-threads -1: OpenBLAS's own default for a
// process that is not bound to cores, as the Python recipe's are:
// $OPENBLAS_NUM_THREADS, else $GOTO_NUM_THREADS, else $OMP_NUM_THREADS
// (each at most the CPU count), else the node's configured CPUs (not this
// rank's binding).
int recipe_blas_thread_count();

// OpenBLAS threads for --blas-threads `option`: itself when positive, the
// recipe's count for -1, else `intra_op_threads`. Not the recipe's count by
// default: that is every CPU of the node, which oversubscribes a rank bound
// to few cores.
int blas_thread_count(int option, int intra_op_threads);

// Sets LibTorch's intra-op pool to `threads` and, when OpenBLAS is the BLAS
// this process uses, OpenBLAS's pool to `blas_threads`.
void apply_thread_count(int threads, int blas_threads);
// The process-wide settings of a run: thread counts (--threads,
// --blas-threads), the memory policy (--retain-memory) and, on a GPU
// (`cuda`), cuDNN's autotuning and determinism (--deterministic).
void configure_process(const RuntimeConfig& runtime, const World& world, bool cuda);

}  // namespace cifar
