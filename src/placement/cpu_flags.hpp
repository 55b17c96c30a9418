// The CPU's feature flags as the kernel reports them (/proc/cpuinfo), for the
// choices that depend on the CPU's instructions (--precision auto:
// step/precision_choice.hpp).
#pragma once

#include <set>
#include <string>

namespace cifar {

// The words of the first "flags" line of a /proc/cpuinfo text (x86: every
// core of a node reports the same); empty where there is none (other
// architectures say "Features").
std::set<std::string> cpu_flags_from_cpuinfo(const std::string& cpuinfo);

// The flags of this node's CPU from <proc>/cpuinfo; empty when unreadable.
std::set<std::string> read_cpu_flags(const std::string& proc = "/proc");

// The first "vendor_id" of a /proc/cpuinfo text ("GenuineIntel",
// "AuthenticAMD"); "" where there is none. The same flag can mean different
// speeds on two vendors' cores (AVX-512 BF16: step/precision_choice.hpp).
std::string cpu_vendor_from_cpuinfo(const std::string& cpuinfo);
std::string read_cpu_vendor(const std::string& proc = "/proc");

}  // namespace cifar
