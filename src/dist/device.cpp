// Device and backend choice for one rank.
#include "dist/device.hpp"

#include "dist/cuda_runtime.hpp"
#include "dist/torch_stream.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {

Backend parse_backend(const std::string& text) {
  if (text == "auto") return Backend::Auto;
  if (text == "mpi") return Backend::Mpi;
  if (text == "nccl") return Backend::Nccl;
  throw ConfigError("--backend: '" + text + "' is not a backend; use auto, mpi or nccl");
}

DeviceRequest parse_device(const std::string& text) {
  if (text == "auto") return DeviceRequest::Auto;
  if (text == "cpu") return DeviceRequest::Cpu;
  if (text == "cuda") return DeviceRequest::Cuda;
  throw ConfigError("--device: '" + text + "' is not a device; use auto, cpu or cuda");
}

std::string to_string(Backend b) {
  switch (b) {
    case Backend::Auto: return "auto";
    case Backend::Mpi: return "mpi";
    case Backend::Nccl: return "nccl";
  }
  return "?";
}

namespace {
void require_cuda(const World& w, const Machine& m, const char* what) {
  if (m.visible_gpus == 0) {
    throw ConfigError(strprintf("%s needs a GPU, but none is visible on host %s (%s). Use --backend mpi "
                                "--device cpu to train on CPUs.",
                                what, w.host.c_str(), m.why_no_gpu.c_str()));
  }
  if (!m.torch_has_cuda) {
    throw ConfigError(strprintf("%s needs a CUDA-enabled LibTorch, but this build's LibTorch is CPU-only. "
                                "Build the 'cuda' preset against a CUDA LibTorch, or use --backend mpi --device cpu.",
                                what));
  }
}
}  // namespace

Placement choose_placement(const World& w, Backend backend, DeviceRequest device, const Machine& m) {
  if (backend == Backend::Auto) {
    const bool nccl_ready = m.nccl_compiled && m.visible_gpus > 0 && m.torch_has_cuda && device != DeviceRequest::Cpu;
    backend = nccl_ready ? Backend::Nccl : Backend::Mpi;
  }
  Placement p;
  p.backend = backend;
  if (backend == Backend::Nccl) {
    if (!m.nccl_compiled) {
      throw ConfigError("--backend nccl: NCCL support was not compiled into this build (CUDA toolkit or NCCL "
                        "not found at configure time; set NCCL_ROOT and reconfigure). Use --backend mpi.");
    }
    if (device == DeviceRequest::Cpu) throw ConfigError("--backend nccl works on GPUs only; drop --device cpu or use --backend mpi");
    require_cuda(w, m, "--backend nccl");
    if (w.local_size > m.visible_gpus) {
      throw ConfigError(strprintf("host %s runs %d ranks but has %d visible GPU(s); NCCL needs one GPU per rank. "
                                  "Start at most %d ranks per node (e.g. --ntasks-per-node=%d), or use --backend mpi.",
                                  w.host.c_str(), w.local_size, m.visible_gpus, m.visible_gpus, m.visible_gpus));
    }
    p.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(w.local_rank));
    return p;
  }
  // MPI: CPU unless asked for CUDA (or auto on a GPU machine without NCCL).
  const bool use_cuda = device == DeviceRequest::Cuda ||
                        (device == DeviceRequest::Auto && m.visible_gpus > 0 && m.torch_has_cuda);
  if (use_cuda) {
    require_cuda(w, m, "--device cuda");
    p.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(w.local_rank % m.visible_gpus));
  }
  return p;
}

Machine probe_machine() {
  Machine m;
  m.visible_gpus = gpu::device_count(&m.why_no_gpu);
  m.nccl_compiled = gpu::compiled();
  m.torch_has_cuda = torch_has_cuda();
  return m;
}

Placement place_rank(const World& world, Backend backend, DeviceRequest device) {
  const Placement p = choose_placement(world, backend, device, probe_machine());
  if (p.device.is_cuda()) gpu::set_device(p.device.index());
  return p;
}

}  // namespace cifar
