// CUDA_CHECK and NCCL_CHECK: only for the sources compiled with the CUDA
// toolkit (gpu/cuda_runtime.cpp, comm/nccl_communicator.cpp).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "util/error.hpp"

#define CUDA_CHECK(call)                                                                       \
  do {                                                                                         \
    cudaError_t cifar_cuda_rc_ = (call);                                                       \
    if (cifar_cuda_rc_ != cudaSuccess)                                                         \
      ::cifar::detail::throw_library_error(                                                    \
          "CUDA", std::string(cudaGetErrorName(cifar_cuda_rc_)) + ": " + cudaGetErrorString(cifar_cuda_rc_), \
          #call, __FILE__, __LINE__);                                                          \
  } while (0)

#define NCCL_CHECK(call)                                                                       \
  do {                                                                                         \
    ncclResult_t cifar_nccl_rc_ = (call);                                                      \
    if (cifar_nccl_rc_ != ncclSuccess && cifar_nccl_rc_ != ncclInProgress)                     \
      ::cifar::detail::throw_library_error("NCCL", ncclGetErrorString(cifar_nccl_rc_), #call,  \
                                           __FILE__, __LINE__);                                \
  } while (0)
