// CUDA runtime and NCCL queries for builds where both were found.
#include "gpu/cuda_runtime.hpp"

#include <dlfcn.h>

#include <algorithm>

#include "gpu/cuda_errors.hpp"
#include "gpu/torch_stream.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar::gpu {

bool compiled() { return true; }

int device_count(std::string* why_none) {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    if (why_none)
      *why_none = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  if (n == 0 && why_none) *why_none = "cudaGetDeviceCount reports 0 devices (check CUDA_VISIBLE_DEVICES)";
  return n;
}

std::vector<std::string> device_names() {
  std::vector<std::string> names;
  const int n = device_count();
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
      names.push_back(strprintf("%s (sm_%d%d, %.0f GiB)", prop.name, prop.major, prop.minor,
                                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0)));
    }
  }
  return names;
}

CudaStack cuda_stack() {
  CudaStack stack;
  // The headers' major is the flavour: a cuda12 build compiles against CUDA
  // 12's. With a CPU LibTorch, GPUs are never used: a CPU build.
  stack.flavour = torch_built_with_cuda() ? strprintf("cuda%d", CUDART_VERSION / 1000) : "cpu";
  // Both work without a usable driver: the driver's is 0 where none is installed.
  if (cudaDriverGetVersion(&stack.driver) != cudaSuccess) stack.driver = 0;
  if (cudaRuntimeGetVersion(&stack.runtime) != cudaSuccess) stack.runtime = 0;
  cudaGetLastError();
  stack.mapped_files = paths::mapped_files();
  // What the build was made against, recorded by src/gpu/CMakeLists.txt. The
  // oldest runtime it runs with is the newer of the CUDA LibTorch was built
  // for and the headers this file compiled against (the same for the torch
  // wheels' builds).
  stack.built_runtime = std::max(CIFAR_BUILT_CUDA_RUNTIME, CUDART_VERSION);
  stack.built_runtime_file = CIFAR_BUILT_CUDART_FILE;
  if (ncclGetVersion(&stack.nccl) != ncclSuccess) stack.nccl = 0;
  stack.built_nccl = NCCL_VERSION_CODE;
  stack.built_nccl_file = CIFAR_BUILT_NCCL_FILE;
  return stack;
}

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  return nccl_version_text(v);
}

// cuDNN is LibTorch's, loaded by it (or not at all): asked through the
// symbol the process already has, so this build links no cuDNN of its own.
std::string cudnn_version() {
  using GetVersion = size_t (*)();
  auto get = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "cudnnGetVersion"));
  if (get == nullptr) return "not loaded";
  const size_t v = get();
  // cuDNN 9 encodes major*10000 + minor*100 + patch; cuDNN 8 major*1000 + minor*100 + patch.
  return v >= 90000 ? strprintf("%zu.%zu.%zu", v / 10000, (v % 10000) / 100, v % 100)
                    : strprintf("%zu.%zu.%zu", v / 1000, (v % 1000) / 100, v % 100);
}

std::string pci_bus_id(int index) {
  char id[32] = {0};
  if (cudaDeviceGetPCIBusId(id, sizeof(id), index) != cudaSuccess) {
    cudaGetLastError();  // clear it: a missing bus id only makes the NUMA check "unknown"
    return "";
  }
  return id;
}

int compute_capability(int index) {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index) != cudaSuccess) {
    cudaGetLastError();  // clear it: an unknown capability only makes --precision auto choose fp32
    return -1;
  }
  return major * 10 + minor;
}

void set_device(int index) { CUDA_CHECK(cudaSetDevice(index)); }

}  // namespace cifar::gpu
