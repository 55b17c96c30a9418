// --cuda-graphs: one training step — forward, loss, backward with the
// bucketed NCCL all-reduce, the wait for it and the graph-safe optimiser
// step (fused_optimizer.hpp) — captured once as a CUDA graph and replayed
// for every full batch, so a step costs one graph launch instead of hundreds
// of kernel launches from the host.
//
//   run 1..kWarmupSteps   the step eagerly on a side stream (cuDNN and cuBLAS
//                         pick their algorithms and workspaces, NCCL sets up)
//   run kWarmupSteps + 1  capture on the side stream, then replay
//   later runs            copy the batch into the static input buffers, replay
//
// The graph reads its inputs from static buffers (images, labels) that each
// run fills in place from the loader's batch, on the compute stream; its
// loss is a static tensor that the next replay overwrites (read it, or add
// it to device sums, before then — stream order does that). Batches of
// another batch size (the epoch's last, partial batch) run eagerly, as does
// evaluation; each image size (--resolution-schedule) warms up and captures
// a graph of its own. Host-side bookkeeping (step counts, lookahead, checkpoints)
// stays outside the graph; the learning rate reaches it through the
// optimiser's device tensor.
//
// What cannot be captured is refused at start-up (cuda_graphs_refusal):
// CPUs, the MPI backend (host staging), fp16 (the loss scaler decides on the
// host each step), gradient accumulation, --profile (it times phases inside
// the step), --on-nonfinite skip (the skip is a host decision before the
// update; `stop` works through the parameter check before every write).
//
// A capture that fails on any rank fails on every rank (agree_on over the
// control communicator), so no rank replays collectives the others do not.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "config/run_config.hpp"
#include "data/batch_loader.hpp"

namespace cifar {

// Why `config` cannot run with --cuda-graphs on a rank placed on `device`
// with `backend`; empty when it can (or --cuda-graphs is off).
std::string cuda_graphs_refusal(const RunConfig& config, const torch::Device& device, const std::string& backend);
// Whether this build can capture (LibTorch with CUDA).
bool cuda_graphs_compiled();

class GraphedStep {
 public:
  static constexpr int kWarmupSteps = 3;
  // The step's work on the static batch; returns the loss. It must use only
  // device work that a graph may capture (no host reads of device values).
  using Body = std::function<torch::Tensor(const Batch&)>;

  // `control`: the host communicator the capture decision is agreed over;
  // `comm`: the gradient communicator, told to watch each replay.
  GraphedStep(torch::Device device, Communicator& control, Communicator& comm);
  ~GraphedStep();
  GraphedStep(const GraphedStep&) = delete;
  GraphedStep& operator=(const GraphedStep&) = delete;

  // Whether `batch` has the shape of the captured (or first) full batch.
  bool fits(const Batch& batch, int64_t full_batch_size) const;
  // One step on `batch` (see above). The parameters must have no .grad
  // before the capturing run (zero_grad with set_to_none, LibTorch 2.x's
  // default), so the graph writes fresh gradients instead of adding to old ones.
  torch::Tensor run(const Batch& batch, const Body& body);
  bool captured() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cifar
