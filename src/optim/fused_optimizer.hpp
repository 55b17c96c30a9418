// Graph-safe Adam and SGD (--fused-optimizer; --cuda-graphs implies it).
//
// LibTorch's torch::optim::Adam computes its bias corrections from a host
// step counter and both optimisers take the learning rate as a host double:
// a CUDA graph captured around them would replay the first captured step's
// numbers for ever. These subclasses keep the learning rate (one 0-dim tensor
// per parameter group) and the step count (one per parameter, as PyTorch's
// fused optimisers do) in tensors on the parameters' device, so a captured
// step reads them at replay time. The schedule writes the rate tensor in
// place before each step (a host-to-device fill, never a read).
//
// The update: ATen's multi-tensor `_fused_adam_` / `_fused_sgd_` kernels
// where LibTorch has them for CPUs and GPUs with a tensor learning rate
// (2.4 and later); elsewhere (Debian's 1.13) the same arithmetic as plain
// tensor operations. Either equals torch::optim::Adam / SGD to rounding
// (tests/optim/fused_optimizer_test.cpp).
//
// State: the moments and momentum buffers are the base class's own
// AdamParamState / SGDParamState tensors, updated in place, so save() and
// load() write and read exactly what torch::optim::Adam / SGD do: a
// checkpoint moves freely between the eager and the graph-safe optimiser.
// Only Adam's step count lives on the device between checkpoints; save()
// copies it into the host state first (a host read, at checkpoint time only).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace cifar {

// What the trainer needs beyond torch::optim::Optimizer.
class GraphSafeStep {
 public:
  virtual ~GraphSafeStep() = default;
  // The coming step's learning rate of parameter group `group`, written into
  // its device tensor (and the host options, which checkpoints record).
  virtual void set_learning_rate(size_t group, double lr) = 0;
  // Whether this build steps with ATen's fused kernels (else plain tensor math).
  static bool uses_fused_kernels();
};

class GraphSafeAdam final : public torch::optim::Adam, public GraphSafeStep {
 public:
  GraphSafeAdam(std::vector<torch::optim::OptimizerParamGroup> groups, torch::optim::AdamOptions defaults);
  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
  void set_learning_rate(size_t group, double lr) override;

 private:
  // One parameter group's state, as tensor lists the kernels take.
  struct GroupState {
    std::vector<torch::Tensor> params, exp_avgs, exp_avg_sqs, steps;
  };
  void prepare_state();  // creates missing states; rebuilds the lists after load()
  void step_group(size_t g);

  std::vector<torch::Tensor> lrs_;  // per group, on the parameters' device
  std::vector<GroupState> groups_;  // empty until the first step or after load()
};

class GraphSafeSGD final : public torch::optim::SGD, public GraphSafeStep {
 public:
  GraphSafeSGD(std::vector<torch::optim::OptimizerParamGroup> groups, torch::optim::SGDOptions defaults);
  torch::Tensor step(LossClosure closure = nullptr) override;
  void load(torch::serialize::InputArchive& archive) override;
  void set_learning_rate(size_t group, double lr) override;

 private:
  struct GroupState {
    std::vector<torch::Tensor> params, buffers;  // buffers: empty without momentum
    bool first_step = true;                      // the buffers are still to be set to the first gradient (torch's rule)
  };
  void prepare_state();
  void step_group(size_t g);

  std::vector<torch::Tensor> lrs_;
  std::vector<GroupState> groups_;
};

}  // namespace cifar
