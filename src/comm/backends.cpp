// The backend registry: placement rules and factory per backend.
#include "comm/backends.hpp"

#include <functional>

#include "comm/mpi_communicator.hpp"
#include "comm/nccl_communicator.hpp"
#include "gpu/cuda_runtime.hpp"
#include "gpu/gpu_binding.hpp"
#include "gpu/torch_stream.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/registry.hpp"

namespace cifar {
namespace {

void require_cuda(const World& w, const Machine& m, const char* what) {
  if (m.visible_gpus == 0) {
    throw ConfigError(
        strprintf("%s needs a GPU, but none is visible on host %s (%s). Use --backend mpi "
                  "--device cpu to train on CPUs.",
                  what, w.host.c_str(), m.why_no_gpu.c_str()));
  }
  if (!m.torch_has_cuda) {
    throw ConfigError(
        strprintf("%s needs a CUDA-enabled LibTorch, but this build's LibTorch is CPU-only. "
                  "Build the 'cuda' preset against a CUDA LibTorch, or use --backend mpi --device cpu.",
                  what));
  }
}

torch::Device cuda_device(int index) { return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index)); }

// Per-task GPU binding: every rank of the node sees one GPU of its own, its cuda:0.
bool bound_per_task(const World& w, const Machine& m) {
  return static_cast<int>(m.node_single_gpus.size()) == w.local_size && gpu::one_gpu_per_rank(m.node_single_gpus);
}

// NCCL: one GPU per rank, the rank's node-local index, or its cuda:0 under
// per-task binding.
bool nccl_can_run(const Machine& m, DeviceRequest device) {
  return m.nccl_compiled && m.visible_gpus > 0 && m.torch_has_cuda && device != DeviceRequest::Cpu;
}

torch::Device place_nccl(const World& w, DeviceRequest device, const Machine& m) {
  if (!m.nccl_compiled) {
    throw ConfigError(
        "--backend nccl: NCCL support was not compiled into this build (CUDA toolkit or NCCL "
        "not found at configure time; set NCCL_ROOT and reconfigure). Use --backend mpi.");
  }
  if (device == DeviceRequest::Cpu)
    throw ConfigError("--backend nccl works on GPUs only; drop --device cpu or use --backend mpi");
  require_cuda(w, m, "--backend nccl");
  const bool per_task = bound_per_task(w, m);
  if (!per_task && w.local_size > m.visible_gpus) {
    throw ConfigError(
        strprintf("host %s runs %d ranks but has %d visible GPU(s); NCCL needs one GPU per rank. "
                  "Start at most %d ranks per node (e.g. --ntasks-per-node=%d), give each rank a GPU of its own "
                  "(srun --gpus-per-task=1), or use --backend mpi.",
                  w.host.c_str(), w.local_size, m.visible_gpus, m.visible_gpus, m.visible_gpus));
  }
  return cuda_device(per_task ? 0 : w.local_rank);
}

std::unique_ptr<Communicator> make_nccl(MPI_Comm comm, torch::Device device, std::chrono::milliseconds timeout) {
  return make_nccl_communicator(comm, device.index(), timeout);
}

// MPI: anywhere. CPU unless asked for CUDA (or auto on a GPU machine without
// NCCL); ranks may share a GPU.
bool mpi_can_run(const Machine&, DeviceRequest) { return true; }

torch::Device place_mpi(const World& w, DeviceRequest device, const Machine& m) {
  const bool use_cuda =
      device == DeviceRequest::Cuda || (device == DeviceRequest::Auto && m.visible_gpus > 0 && m.torch_has_cuda);
  if (!use_cuda) return torch::kCPU;
  require_cuda(w, m, "--device cuda");
  return cuda_device(w.local_rank % m.visible_gpus);  // per-task binding: each rank's one GPU, cuda:0
}

std::unique_ptr<Communicator> make_mpi(MPI_Comm comm, torch::Device, std::chrono::milliseconds timeout) {
  return std::make_unique<MpiCommunicator>(comm, timeout);
}

struct BackendEntry {
  const char* name;
  bool (*can_run)(const Machine&, DeviceRequest);                       // may `auto` pick it here?
  torch::Device (*place)(const World&, DeviceRequest, const Machine&);  // throws ConfigError
  std::unique_ptr<Communicator> (*make)(MPI_Comm, torch::Device, std::chrono::milliseconds);
};

// The registry, in the order `auto` tries the backends.
const std::vector<BackendEntry>& registry() {
  static const std::vector<BackendEntry> entries = {
      {"nccl", nccl_can_run, place_nccl, make_nccl},
      {"mpi", mpi_can_run, place_mpi, make_mpi},
  };
  return entries;
}

const BackendEntry& entry(const std::string& name) { return find_registered(registry(), name, "backend"); }

// The GPU each rank of the node computes on: the rank's own one under
// per-task binding, else the backend's rule applied to each local rank
// (every rank of the node sees the same GPUs then).
std::vector<std::string> node_gpus_of(const BackendEntry& e, const World& w, DeviceRequest device, const Machine& m,
                                      torch::Device mine) {
  if (!mine.is_cuda()) return std::vector<std::string>(static_cast<size_t>(w.local_size));
  if (bound_per_task(w, m)) return m.node_single_gpus;
  std::vector<std::string> gpus;
  for (int local = 0; local < w.local_size; ++local) {
    World other = w;
    other.local_rank = local;
    const int index = e.place(other, device, m).index();
    gpus.push_back(index < static_cast<int>(m.gpu_bus_ids.size()) ? m.gpu_bus_ids[static_cast<size_t>(index)] : "");
  }
  return gpus;
}

}  // namespace

std::vector<std::string> backend_names() { return registered_names(registry()); }

Placement choose_placement(const World& w, const std::string& backend, DeviceRequest device, const Machine& m) {
  std::string name = backend;
  if (name == "auto") {
    for (const auto& e : registry()) {
      if (e.can_run(m, device)) {
        name = e.name;
        break;
      }
    }
  }
  const BackendEntry& e = entry(name);
  const torch::Device mine = e.place(w, device, m);
  return Placement{e.name, mine, node_gpus_of(e, w, device, m, mine)};
}

namespace {
// What each rank of the node sees, by local rank (Machine::node_single_gpus).
std::vector<std::string> gather_node_single_gpus(MPI_Comm comm, int visible_gpus) {
  constexpr int kIdBytes = 64;  // a bus id is 16 characters
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_Comm node = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int local_size = 1;
  MPI_CHECK(MPI_Comm_size(node, &local_size));
  std::string mine = visible_gpus == 1 ? gpu::pci_bus_id(0) : "";
  mine.resize(kIdBytes, '\0');
  std::string all(static_cast<size_t>(kIdBytes * local_size), '\0');
  MPI_CHECK(MPI_Allgather(mine.data(), kIdBytes, MPI_CHAR, all.data(), kIdBytes, MPI_CHAR, node));
  MPI_CHECK(MPI_Comm_free(&node));
  std::vector<std::string> ids;
  for (int r = 0; r < local_size; ++r) ids.emplace_back(all.c_str() + static_cast<size_t>(r * kIdBytes));
  return ids;
}
}  // namespace

Machine probe_machine(MPI_Comm comm) {
  Machine m;
  m.visible_gpus = gpu::device_count(&m.why_no_gpu);
  m.nccl_compiled = gpu::compiled();
  m.torch_has_cuda = torch_has_cuda();
  m.node_single_gpus = gather_node_single_gpus(comm, m.visible_gpus);
  for (int i = 0; i < m.visible_gpus; ++i) m.gpu_bus_ids.push_back(gpu::pci_bus_id(i));
  return m;
}

Placement place_rank(MPI_Comm comm, const World& world, const std::string& backend, DeviceRequest device) {
  const Placement p = choose_placement(world, backend, device, probe_machine(comm));
  if (p.device.is_cuda()) gpu::set_device(p.device.index());
  return p;
}

std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, const Placement& placement,
                                                std::chrono::milliseconds timeout) {
  return entry(placement.backend).make(comm, placement.device, timeout);
}

}  // namespace cifar
