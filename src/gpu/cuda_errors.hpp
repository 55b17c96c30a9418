// CUDA_CHECK and NCCL_CHECK: only for the sources compiled with the CUDA
// toolkit (gpu/cuda_runtime.cpp, comm/nccl_communicator.cpp).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "util/error.hpp"

#define CUDA_CHECK(call)                                                                                            \
  do {                                                                                                              \
    cudaError_t cifar_cuda_rc_ = (call);                                                                            \
    if (cifar_cuda_rc_ != cudaSuccess)                                                                              \
      ::cifar::detail::throw_library_error(                                                                         \
          "CUDA", std::string(cudaGetErrorName(cifar_cuda_rc_)) + ": " + cudaGetErrorString(cifar_cuda_rc_), #call, \
          __FILE__, __LINE__);                                                                                      \
  } while (0)

namespace cifar::detail {
// NCCL's own words for a failure: the result's generic text ("invalid
// usage") and, when NCCL recorded one, its last error message, which names
// the cause ("Invalid config blocking attribute value -1"). ncclGetLastError
// keeps one message per process; its communicator argument is unused (NCCL
// 2.13+), so a failed ncclCommInitRank, which leaves no communicator, is
// described too.
inline std::string nccl_error_text(ncclResult_t rc) {
  std::string text = ncclGetErrorString(rc);
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') text += std::string(" (") + last + ")";
  return text;
}
}  // namespace cifar::detail

#define NCCL_CHECK(call)                                                                                              \
  do {                                                                                                                \
    ncclResult_t cifar_nccl_rc_ = (call);                                                                             \
    if (cifar_nccl_rc_ != ncclSuccess && cifar_nccl_rc_ != ncclInProgress)                                            \
      ::cifar::detail::throw_library_error("NCCL", ::cifar::detail::nccl_error_text(cifar_nccl_rc_), #call, __FILE__, \
                                           __LINE__);                                                                 \
  } while (0)
