// Process-wide allocator settings; see memory.hpp.
#include "util/memory.hpp"

#include <malloc.h>

#include <climits>

namespace cifar {

void retain_freed_memory() {
  mallopt(M_MMAP_MAX, 0);               // no mmap'ed blocks: nothing is unmapped on free
  mallopt(M_TRIM_THRESHOLD, INT_MAX);   // never give the heap top back to the kernel
}

}  // namespace cifar
