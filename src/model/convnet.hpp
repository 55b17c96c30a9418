// ConvNet: the network of the PyTorch DDP recipe that cifar_mpi replaces, layer for layer,
// with the same parameter names so its state dict loads into the Python class.
#pragma once

#include "model/model.hpp"

namespace cifar {

class ConvNet : public Model {
 public:
  ConvNet();
  torch::Tensor forward(const torch::Tensor& x) override;

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};

}  // namespace cifar
