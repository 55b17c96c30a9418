// Where a rank computes and which backend reduces its gradients. The choice is
// a pure function of the world, the request and what the machine has, so it is
// tested without GPUs; `place_rank` applies it to the live process.
#pragma once

#include <torch/types.h>

#include <string>

#include "dist/world.hpp"

namespace cifar {

enum class Backend { Auto, Mpi, Nccl };
enum class DeviceRequest { Auto, Cpu, Cuda };

Backend parse_backend(const std::string& text);       // "auto"|"mpi"|"nccl", ConfigError otherwise
DeviceRequest parse_device(const std::string& text);  // "auto"|"cpu"|"cuda"
std::string to_string(Backend b);

struct Machine {
  int visible_gpus = 0;
  std::string why_no_gpu;      // from gpu::device_count when 0
  bool nccl_compiled = false;
  bool torch_has_cuda = false;
};

struct Placement {
  Backend backend = Backend::Mpi;  // never Auto
  torch::Device device = torch::kCPU;
};

// The rules: NCCL needs one GPU per rank on each node, NCCL compiled in and a
// CUDA LibTorch; `auto` takes NCCL when all of that holds, MPI on CPU
// otherwise. MPI may also run on GPUs (staged through host memory), where
// several ranks may share one GPU. Throws ConfigError naming the host and the
// fix when the request cannot be met.
Placement choose_placement(const World& world, Backend backend, DeviceRequest device, const Machine& machine);

// Queries this machine, chooses, and makes the choice current (cudaSetDevice).
Placement place_rank(const World& world, Backend backend, DeviceRequest device);
Machine probe_machine();

}  // namespace cifar
