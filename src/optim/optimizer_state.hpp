// A LibTorch optimiser's state (momentum buffers, Adam moments and step
// counts, the parameter groups) as a stateful part of a checkpoint: the bytes
// of its torch::serialize::OutputArchive, a TorchScript archive of its own.
#pragma once

#include <torch/torch.h>

#include "util/stateful.hpp"

namespace cifar {

class OptimizerState : public Stateful {
 public:
  // Its checkpoint entry: the archive's bytes as a uint8 tensor.
  static constexpr const char* kKey = "optimizer";

  // `device`: where the optimiser's parameters (and so its state) live.
  OptimizerState(torch::optim::Optimizer& optimizer, torch::Device device) : optimizer_(optimizer), device_(device) {}
  void save_state(StateDict& state) const override;
  // CheckpointError when the state does not fit this model and optimiser, or
  // LibTorch cannot read it.
  void restore_state(const StateDict& state) override;

  // The archive's bytes in a saved entry.
  static std::string archive_bytes(const at::Tensor& entry);

 private:
  torch::optim::Optimizer& optimizer_;
  torch::Device device_;
};

}  // namespace cifar
