// The CPU's flags from /proc/cpuinfo texts: the first core's "flags" line;
// none where the file has no such line (other architectures) or is missing.
#include "placement/cpu_flags.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "test_files.hpp"  // tests/data

namespace cifar {
namespace {

TEST(CpuFlags, FirstFlagsLineIsRead) {
  const std::string cpuinfo =
      "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 avx512_bf16 amx_bf16 amx_tile\n"
      "\nprocessor\t: 1\nflags\t\t: fpu\n";
  const std::set<std::string> flags = cpu_flags_from_cpuinfo(cpuinfo);
  EXPECT_EQ(flags, (std::set<std::string>{"fpu", "sse2", "avx512_bf16", "amx_bf16", "amx_tile"}));
}

TEST(CpuFlags, FirstVendorIsRead) {
  EXPECT_EQ(cpu_vendor_from_cpuinfo("processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu\n"), "AuthenticAMD");
  EXPECT_EQ(cpu_vendor_from_cpuinfo("processor\t: 0\nFeatures\t: fp asimd\n"), "");
}

TEST(CpuFlags, NoFlagsLineGivesNone) {
  EXPECT_TRUE(cpu_flags_from_cpuinfo("processor\t: 0\nFeatures\t: fp asimd bf16\n").empty());
  EXPECT_TRUE(cpu_flags_from_cpuinfo("").empty());
}

TEST(CpuFlags, ReadFromAProcTree) {
  const std::string proc = test::TempDir().file("");  // a folder that no longer exists: nothing to read
  EXPECT_TRUE(read_cpu_flags(proc).empty());
  EXPECT_EQ(read_cpu_vendor(proc), "");
  test::TempDir dir;
  std::ofstream(dir.file("cpuinfo")) << "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx512_bf16\n";
  EXPECT_EQ(read_cpu_flags(dir.file("")), (std::set<std::string>{"fpu", "avx512_bf16"}));
  EXPECT_EQ(read_cpu_vendor(dir.file("")), "GenuineIntel");
}

}  // namespace
}  // namespace cifar
