// What --cuda-graphs can run (see cuda_graph_step.hpp); the capture itself is
// in cuda_graph_step_cuda.cpp (LibTorch with CUDA) or the stub.
#include "step/cuda_graph_step.hpp"

namespace cifar {

std::string cuda_graphs_refusal(const RunConfig& c, const torch::Device& device, const std::string& backend) {
  if (!c.runtime.cuda_graphs) return {};
  const std::string fix = " (or --cuda-graphs false)";
  if (!device.is_cuda()) return "--cuda-graphs true needs a GPU (--device cuda): CPUs have no graphs to replay";
  if (!cuda_graphs_compiled())
    return "--cuda-graphs true needs a LibTorch with CUDA: this build has none (build the cuda preset)";
  if (backend != "nccl")
    return "--cuda-graphs true needs --backend nccl: the " + backend +
           " backend stages gradients through host memory, which a CUDA graph cannot capture" + fix;
  if (c.training.precision == Precision::Fp16)
    return "--cuda-graphs true does not combine with --precision fp16: the loss scaler decides on the host, each "
           "step, whether to skip it; use --precision bf16" +
           fix;
  if (c.training.accumulate != 1)
    return "--cuda-graphs true needs --accumulate 1: the graph holds one whole optimiser step" + fix;
  // The guard's skip decision precedes the update, on the host; a replayed
  // step always updates. (stop still holds: the parameters are checked before
  // every checkpoint and model write, and a non-finite step makes them so.)
  if (c.training.on_nonfinite == OnNonFinite::Skip)
    return "--cuda-graphs true does not combine with --on-nonfinite skip: a replayed step cannot be skipped; use "
           "--on-nonfinite stop" +
           fix;
  if (c.runtime.profile)
    return "--cuda-graphs true does not combine with --profile, which times the phases inside a step; a replayed "
           "step has none" +
           fix;
  return {};
}

}  // namespace cifar
