// The CUDA stream LibTorch is computing on, as an opaque cudaStream_t, so that
// NCCL work can be ordered against it with events. LibTorch with CUDA gives
// its current stream; a CPU LibTorch (which never computes on a GPU) gives the
// legacy default stream (nullptr).
#pragma once

namespace cifar {
void* torch_compute_stream(int device_index);
bool torch_has_cuda();  // built with CUDA and a device usable now
// Built against a CUDA LibTorch, whether or not this node's driver runs it.
bool torch_built_with_cuda();
// Waits for the work queued on LibTorch's current stream of the device (not
// for other streams: NCCL's work on its own stream goes on). Nothing without
// CUDA.
void synchronize_compute_stream(int device_index);
// CUDA's sync-debug mode (c10::cuda::warning_state()): while on, every
// operation that makes the host wait for the GPU (a blocking copy, .item(),
// a stream or device synchronisation) throws. Returns false, doing nothing,
// when LibTorch has no CUDA. For tests of the steady-state step.
bool set_cuda_sync_errors(bool on);
}  // namespace cifar
