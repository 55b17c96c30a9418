// CUDA runtime and NCCL queries for builds where both were found.
#include "gpu/cuda_runtime.hpp"

#include "gpu/cuda_errors.hpp"
#include "util/log.hpp"

namespace cifar::gpu {
namespace {
std::string cuda_version_text(int v) { return strprintf("%d.%d", v / 1000, (v % 1000) / 10); }
}  // namespace

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

std::string runtime_version() {
  int v = 0;
  return cudaRuntimeGetVersion(&v) == cudaSuccess ? cuda_version_text(v) : "unknown";
}

std::string driver_version() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess || v == 0) return "no driver";
  return cuda_version_text(v);
}

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return strprintf("%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
}

std::string pci_bus_id(int index) {
  char id[32] = {0};
  if (cudaDeviceGetPCIBusId(id, sizeof(id), index) != cudaSuccess) {
    cudaGetLastError();  // clear it: a missing bus id only makes the NUMA check "unknown"
    return "";
  }
  return id;
}

void set_device(int index) { CUDA_CHECK(cudaSetDevice(index)); }

}  // namespace cifar::gpu
