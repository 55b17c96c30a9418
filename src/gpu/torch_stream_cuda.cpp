// Compute stream for a CUDA-enabled LibTorch.
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>

#include "gpu/torch_stream.hpp"

namespace cifar {
void* torch_compute_stream(int device_index) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_index)).stream();
}
bool torch_has_cuda() { return torch::cuda::is_available(); }
}  // namespace cifar
