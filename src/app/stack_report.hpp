// The CUDA stack as the user reads it: the driver's CUDA, the runtime's and
// the file it came from, the version the build was made for, the build's
// flavour, then cuDNN and NCCL with their files. --check-env and --self-test
// print these same lines, so a node's report reads alike in both.
#pragma once

#include <string>
#include <vector>

namespace cifar {

// "CUDA:        driver CUDA 12.2, runtime 12.8 (built for 12.8) from FILE; cuda12 build",
// "cuDNN:       ...", "NCCL:        ...": labels padded to one column.
std::vector<std::string> cuda_stack_lines();

}  // namespace cifar
