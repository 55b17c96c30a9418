// The CUDA stack's report lines (stack_report.hpp), from the live values of
// gpu/cuda_runtime.hpp and the files mapped into this process.
#include "app/stack_report.hpp"

#include <boost/algorithm/string/join.hpp>

#include "gpu/cuda_runtime.hpp"
#include "gpu/cuda_stack.hpp"
#include "util/log.hpp"

namespace cifar {

namespace {

// " from FILE" (or FILES, when several: a mixed stack) of a library the process mapped; "" when none is.
std::string loaded_from(const std::vector<std::string>& mapped, const char* soname_stem) {
  const std::vector<std::string> files = gpu::library_files(mapped, soname_stem);
  return files.empty() ? "" : " from " + boost::algorithm::join(files, " and ");
}

// " (built for 12.8)": the version a CUDA build was made against; "" where unknown (no CUDA compiled).
std::string built_for(int version, std::string (*text)(int)) {
  return version > 0 ? " (built for " + text(version) + ")" : "";
}

}  // namespace

std::vector<std::string> cuda_stack_lines() {
  const gpu::CudaStack stack = gpu::cuda_stack();
  const std::vector<std::string>& mapped = stack.mapped_files;
  // The driver's CUDA, the runtime's and the file it came from, the version
  // the build was made for, and the flavour: what the start-up check holds
  // them against (gpu/cuda_stack.hpp).
  return {strprintf("CUDA:        driver %s, runtime %s%s%s; %s",
                    stack.driver > 0 ? ("CUDA " + gpu::cuda_version_text(stack.driver)).c_str() : "none",
                    gpu::compiled() ? gpu::cuda_version_text(stack.runtime).c_str() : "not compiled",
                    built_for(stack.built_runtime, gpu::cuda_version_text).c_str(),
                    loaded_from(mapped, "libcudart.so").c_str(),
                    stack.flavour == "cpu" ? "a CPU build (LibTorch without CUDA): nothing to check"
                                           : (stack.flavour + " build").c_str()),
          "cuDNN:       " + gpu::cudnn_version() + loaded_from(mapped, "libcudnn.so"),
          "NCCL:        " + gpu::nccl_version() + built_for(stack.built_nccl, gpu::nccl_version_text) +
              loaded_from(mapped, "libnccl.so")};
}

}  // namespace cifar
