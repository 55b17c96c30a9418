// Keeping freed memory in the process.
//
// glibc gives freed blocks of 128 KiB and more back to the kernel (munmap, or
// trimming the top of the heap). A training step frees and allocates the same
// activation buffers every step, so without this every step faults them in
// again page by page: 1.2 million minor page faults in 60 convnet steps at
// batch 256 on one rank, against 97 thousand with it, and about 15% more
// images/s (README, Performance). PyTorch's tuning guide gets the same effect
// by preloading jemalloc or tcmalloc; this needs no environment.
#pragma once

namespace cifar {

// From now on large blocks come from the heap instead of mmap, and the heap is
// never trimmed: freed memory is reused by the next allocation. Process-wide.
void retain_freed_memory();

}  // namespace cifar
