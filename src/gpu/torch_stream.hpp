// The CUDA stream LibTorch is computing on, as an opaque cudaStream_t, so that
// NCCL work can be ordered against it with events. LibTorch with CUDA gives
// its current stream; a CPU LibTorch (which never computes on a GPU) gives the
// legacy default stream (nullptr).
#pragma once

namespace cifar {
void* torch_compute_stream(int device_index);
bool torch_has_cuda();
}  // namespace cifar
