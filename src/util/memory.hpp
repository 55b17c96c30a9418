// Memory: the machine's size, and keeping freed memory in the process.
//
// glibc gives freed blocks of 128 KiB and more back to the kernel (munmap, or
// trimming the top of the heap). A training step frees and allocates the same
// activation buffers every step, so without this every step faults them in
// again page by page. PyTorch's tuning guide gets the same effect by
// preloading jemalloc or tcmalloc; this needs no environment. Measured
// effect: docs/performance.md.
#pragma once

#include <cstdint>

namespace cifar {

// The machine's physical memory in bytes: the limit against which sizes read
// from files and command lines are checked before they are allocated.
int64_t physical_memory_bytes();

// From now on large blocks come from the heap instead of mmap, and the heap is
// never trimmed: freed memory is reused by the next allocation. Process-wide.
void retain_freed_memory();

}  // namespace cifar
