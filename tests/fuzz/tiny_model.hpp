// The checkpoint fuzz harness's model: a parameter of each kind the real ones
// have (weights, biases, BatchNorm's float and integer buffers), small enough
// for seed files of a few KiB. tests/checkpoint/formats_test.cpp restores the
// committed files it wrote into it.
#pragma once

#include <torch/torch.h>

#include "model/model.hpp"

namespace cifar::test {

class TinyModel : public Model {
 public:
  TinyModel() : Model("tiny") {
    fc_ = register_module("fc", torch::nn::Linear(4, 3));
    bn_ = register_module("bn", torch::nn::BatchNorm1d(3));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return bn_(fc_(x.reshape({x.size(0), -1}).narrow(1, 0, 4)));
  }

 private:
  torch::nn::Linear fc_{nullptr};
  torch::nn::BatchNorm1d bn_{nullptr};
};

}  // namespace cifar::test
