// The CUDA runtime and NCCL as the rest of the program sees them, without
// including their headers: compiled from cuda_runtime.cpp where the CUDA
// toolkit and NCCL were found at configure time, from cuda_runtime_stub.cpp
// (everything "not compiled") elsewhere.
#pragma once

#include <string>
#include <vector>

#include "gpu/cuda_stack.hpp"

namespace cifar::gpu {

// True when this build has the CUDA runtime and NCCL compiled in.
bool compiled();
// Number of visible CUDA devices; 0 with `why_none` set when there are none
// (no driver, no device, CUDA_VISIBLE_DEVICES empty, or not compiled).
int device_count(std::string* why_none = nullptr);
std::vector<std::string> device_names();
// The CUDA stack of this process, for check_cuda_stack: the build's flavour,
// the driver's and the loaded runtime's CUDA versions, the files mapped.
CudaStack cuda_stack();
std::string nccl_version();   // "2.28.3" or "not compiled"
std::string cudnn_version();  // "9.10.2", "not loaded" or "not compiled"
// The PCI bus id of device `index` ("0000:3B:00.0"), for its NUMA node in
// sysfs; "" when unknown or not compiled.
std::string pci_bus_id(int index);
// The compute capability of device `index` as major * 10 + minor (90 is
// 9.0); -1 when unknown or not compiled.
int compute_capability(int index);
void set_device(int index);

}  // namespace cifar::gpu
