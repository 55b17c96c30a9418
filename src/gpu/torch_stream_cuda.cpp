// Compute stream for a CUDA-enabled LibTorch.
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>

#include "gpu/torch_stream.hpp"

namespace cifar {
void* torch_compute_stream(int device_index) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_index)).stream();
}
bool torch_has_cuda() { return torch::cuda::is_available(); }
bool torch_built_with_cuda() { return true; }
void synchronize_compute_stream(int device_index) {
  c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_index)).synchronize();
}
bool set_cuda_sync_errors(bool on) {
  c10::cuda::warning_state().set_sync_debug_mode(on ? c10::cuda::SyncDebugMode::L_ERROR
                                                    : c10::cuda::SyncDebugMode::L_DISABLED);
  return true;
}
}  // namespace cifar
