// Compute threads per rank. Several ranks on one node must not oversubscribe
// its cores: each rank takes the cores it is bound to (the launcher's
// binding), shared fairly among the ranks bound to the same cores, and the
// OpenMP and OpenBLAS pools are sized to match.
#pragma once

#include "dist/world.hpp"

namespace cifar {

// Threads this rank should use when --threads is 0.
int automatic_thread_count(const World& world);
// Sets LibTorch's intra-op pool (and OpenBLAS's, when it is the BLAS) to `threads`.
void apply_thread_count(int threads);

}  // namespace cifar
