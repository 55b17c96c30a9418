// Whether the CUDA stack a process loaded can run on this node's driver: a
// plain function of the versions and of the files mapped into the process,
// so every verdict is tested on a CPU machine (tests/gpu/cuda_stack_test.cpp).
// cuda_runtime.hpp supplies the live values.
//
// A CUDA 12.x runtime runs on any driver that reports CUDA 12.0 or newer
// (R525 and later: CUDA's minor-version compatibility), a 13.x runtime on
// drivers from CUDA 13.0 (R580). Too old a driver makes CUDA report no device
// (cudaErrorInsufficientDriver), and a run on --device auto would train on
// CPUs without saying why; two CUDA runtimes or two NCCLs in one process (a
// system toolkit's beside a wheel's) fail in ways that name neither. A
// runtime or NCCL older than the build's (a `module load cuda/12.2` library
// found first) lacks functions that LibTorch calls: the process dies with a
// "symbol lookup error" on the first such call, from the loader, on no rank's
// line.
#pragma once

#include <string>
#include <vector>

namespace cifar::gpu {

// What a process would run CUDA with, and what the build was made against.
// CUDA versions as CUDA reports them: major * 1000 + minor * 10 (12020 is
// 12.2); NCCL's as NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch
// (22705 is 2.27.5). 0 is unknown throughout, "" an unknown file.
struct CudaStack {
  std::string flavour;                    // "cuda12", "cuda13" (the build's CUDA major); "cpu" without CUDA
  int driver = 0;                         // the newest CUDA the driver supports; 0: no driver
  int runtime = 0;                        // the loaded runtime's
  std::vector<std::string> mapped_files;  // every file mapped into the process (paths::mapped_files)
  int built_runtime = 0;                  // the oldest runtime the build runs with: the CUDA LibTorch was built for
  std::string built_runtime_file = {};    // the libcudart the build linked
  int nccl = 0;                           // the loaded NCCL's (ncclGetVersion)
  int built_nccl = 0;                     // the NCCL the build compiled against (NCCL_VERSION_CODE)
  std::string built_nccl_file = {};       // the libnccl the build linked
};

struct StackVerdict {
  bool ok = true;
  std::string message;  // why not, with the fix; "" when ok
};

// Ok for a CPU build, where no driver answers (the run is on CPUs, as the
// placement then says), or when `uses_gpu` is false (--device cpu). Refused:
// more than one libcudart or libnccl mapped (naming the files), a runtime
// whose major is not the flavour's, a runtime or NCCL older than the build's
// (naming both versions and both files; not judged where either version is
// unknown: refusing what cannot be shown wrong would end the job, since exit
// code 2 is never restarted), a driver older than the runtime's major (naming
// both versions and the flavour that runs on this driver).
StackVerdict check_cuda_stack(const CudaStack& stack, bool uses_gpu);

// This process's stack (cuda_runtime.hpp's cuda_stack()) judged: throws
// ConfigError (exit code 2: the same node refuses it at every restart) with
// check_cuda_stack's message.
void require_usable_cuda_stack(bool uses_gpu);

// "12.2" for 12020; "none" for 0.
std::string cuda_version_text(int version);
// "2.27.5" for 22705 (and 2.8's older code: "2.8.4" for 2804); "none" for 0.
std::string nccl_version_text(int version);
// The flavour whose runtime this driver runs: "cuda12" for drivers of CUDA
// 12.x, "cuda13" from 13.0; "" below 12.0.
std::string flavour_for_driver(int driver);

// The files of `mapped` that are the library `soname_stem` itself
// ("libcudart.so", "libnccl.so", "libcudnn.so"), each once, in the order
// mapped: libcudart.so.12 and libcudart.so.13.0.48 count; libnccl-net.so and
// libcudnn_graph.so.9 (a plugin, a sub-library) do not.
std::vector<std::string> library_files(const std::vector<std::string>& mapped, const std::string& soname_stem);

}  // namespace cifar::gpu
