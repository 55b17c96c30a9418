// The backend registry: for each communicator backend, the rules that place a
// rank (which device it computes on) and the factory that builds its
// Communicator. `--backend auto` takes the first backend, in registry order,
// that this machine can run. Adding a backend is one entry in backends.cpp
// (docs/extending.md).
//
// The choice is a pure function of the world, the request and what the
// machine has, so it is tested without GPUs; `place_rank` applies it to the
// live process.
#pragma once

#include <mpi.h>
#include <torch/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "config/choices.hpp"
#include "mpi/world.hpp"

namespace cifar {

// What this machine offers a rank.
struct Machine {
  int visible_gpus = 0;
  std::string why_no_gpu;  // from gpu::device_count when 0
  bool nccl_compiled = false;
  bool torch_has_cuda = false;
  // For each rank of this node, by local rank: the PCI bus id of the one GPU
  // it sees, "" when it sees none or several (gpu/gpu_binding.hpp); empty
  // when not gathered.
  std::vector<std::string> node_single_gpus;
  // The PCI bus id of each GPU this rank sees, by CUDA index; empty when
  // not probed.
  std::vector<std::string> gpu_bus_ids;
};

struct Placement {
  std::string backend = "mpi";  // a registered name, never "auto"
  torch::Device device = torch::kCPU;
  // For each rank of this node, by local rank: the PCI bus id of the GPU it
  // computes on under the same rule, "" on the CPU or where the id is
  // unknown. Where each rank's GPU sits (placement/numa_binding.hpp).
  std::vector<std::string> node_gpus;
};

// Registered backend names, in the order `auto` tries them.
std::vector<std::string> backend_names();

// The backend `backend` ("auto" or a registered name) places this rank, or
// throws ConfigError naming the host and the fix when the request cannot be
// met: NCCL needs one GPU per rank on each node, NCCL compiled in and a CUDA
// LibTorch; MPI runs on CPUs, or on GPUs (staged through host memory) where
// several ranks may share one GPU. A rank takes cuda:<local rank>, or its
// cuda:0 when each rank of its node sees one GPU of its own (per-task GPU
// binding). Placement::node_gpus applies the same rule to each rank of the
// node.
Placement choose_placement(const World& world, const std::string& backend, DeviceRequest device,
                           const Machine& machine);

// Collective over `comm` (the node's ranks compare their GPUs).
Machine probe_machine(MPI_Comm comm);
// Queries this machine, chooses, and makes the choice current (cudaSetDevice).
// Collective over `comm`.
Placement place_rank(MPI_Comm comm, const World& world, const std::string& backend, DeviceRequest device);

// The placement's Communicator over `comm`; every collective times out after `timeout`.
std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, const Placement& placement,
                                                std::chrono::milliseconds timeout);

}  // namespace cifar
