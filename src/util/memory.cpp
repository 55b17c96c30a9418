// Process-wide allocator settings; see memory.hpp.
#include "util/memory.hpp"

#include <malloc.h>
#include <unistd.h>

#include <climits>

namespace cifar {

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : INT64_MAX;
}

void retain_freed_memory() {
  mallopt(M_MMAP_MAX, 0);              // no mmap'ed blocks: nothing is unmapped on free
  mallopt(M_TRIM_THRESHOLD, INT_MAX);  // never give the heap top back to the kernel
}

}  // namespace cifar
