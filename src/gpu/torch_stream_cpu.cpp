// Compute stream for a CPU-only LibTorch: it never launches GPU work, so the
// legacy default stream is the right thing to order against.
#include "gpu/torch_stream.hpp"

namespace cifar {
void* torch_compute_stream(int) { return nullptr; }
bool torch_has_cuda() { return false; }
bool torch_built_with_cuda() { return false; }
void synchronize_compute_stream(int) {}
bool set_cuda_sync_errors(bool) { return false; }
}  // namespace cifar
