// Stand-in for builds without the CUDA toolkit or NCCL: no GPU, and every
// query says why.
#include "gpu/cuda_runtime.hpp"

#include "util/error.hpp"
#include "util/paths.hpp"

namespace cifar::gpu {

bool compiled() { return false; }
int device_count(std::string* why_none) {
  if (why_none) *why_none = "CUDA/NCCL support was not compiled into this build (not found at configure time)";
  return 0;
}
std::vector<std::string> device_names() { return {}; }
CudaStack cuda_stack() { return CudaStack{"cpu", 0, 0, paths::mapped_files()}; }
std::string nccl_version() { return "not compiled"; }
std::string cudnn_version() { return "not compiled"; }
std::string pci_bus_id(int) { return ""; }
int compute_capability(int) { return -1; }
void set_device(int) { throw Error("CUDA support was not compiled into this build; use --backend mpi --device cpu"); }

}  // namespace cifar::gpu
