// The CPU's flags from /proc/cpuinfo texts: the first core's "flags" line;
// none where the file has no such line (other architectures) or is missing.
#include "placement/cpu_flags.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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
  const auto proc = std::filesystem::temp_directory_path() / ("cpu_flags_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(proc);
  std::ofstream(proc / "cpuinfo") << "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx512_bf16\n";
  EXPECT_EQ(read_cpu_flags(proc.string()), (std::set<std::string>{"fpu", "avx512_bf16"}));
  EXPECT_EQ(read_cpu_vendor(proc.string()), "GenuineIntel");
  std::filesystem::remove_all(proc);
  EXPECT_TRUE(read_cpu_flags(proc.string()).empty());
}

}  // namespace
}  // namespace cifar
