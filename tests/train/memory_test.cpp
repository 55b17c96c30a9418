// retain_freed_memory: a freed large block stays in the process and is reused,
// where glibc's default gives it back to the kernel.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "util/memory.hpp"

namespace cifar {
namespace {

long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Touches 64 MiB, frees it, and returns how much more the process holds than before.
long held_after_free() {
  constexpr size_t kBytes = 64 << 20;
  const long before = resident_bytes();
  char* p = static_cast<char*>(std::malloc(kBytes));
  std::memset(p, 1, kBytes);
  asm volatile("" : : "r"(p) : "memory");  // keep the compiler from eliding the pair
  std::free(p);
  return resident_bytes() - before;
}

TEST(RetainFreedMemory, FreedBlocksStayInTheProcessAndAreReused) {
  EXPECT_LT(held_after_free(), 8 << 20) << "glibc's default: a 64 MiB block is unmapped on free";
  retain_freed_memory();
  EXPECT_GT(held_after_free(), 56 << 20) << "kept for reuse";
  EXPECT_LT(held_after_free(), 8 << 20) << "reused: the process does not grow again";
}

}  // namespace
}  // namespace cifar
