// The GPU tests' precondition: they skip (visibly, with the reason) unless a
// CUDA device and a CUDA LibTorch are present. A macro because GTEST_SKIP
// must return from the test body itself.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gpu/cuda_runtime.hpp"
#include "gpu/torch_stream.hpp"

#define REQUIRE_GPU()                                                                              \
  do {                                                                                             \
    std::string why;                                                                               \
    if (cifar::gpu::device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;            \
    if (!cifar::torch_has_cuda()) GTEST_SKIP() << "LibTorch without CUDA (build the cuda preset)"; \
  } while (0)
