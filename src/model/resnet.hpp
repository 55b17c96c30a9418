// ResNet-18 in its CIFAR form: a 3x3 stride-1 stem without max-pool, four
// stages of two BasicBlocks (64/128/256/512 channels), global average pool and
// a 512->10 classifier. Names follow torchvision (conv1, bn1, layerN.M.conv1,
// layerN.M.downsample.{0,1}, fc), so the state dict loads into the equivalent
// Python module.
#pragma once

#include "model/model.hpp"

namespace cifar {

class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  torch::nn::Sequential downsample_{nullptr};  // null when the shapes already match
};
TORCH_MODULE(BasicBlock);

class ResNet18 : public Model {
 public:
  ResNet18();
  torch::Tensor forward(const torch::Tensor& x) override;

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  std::vector<torch::nn::Sequential> layers_;
  torch::nn::Linear fc_{nullptr};
};

}  // namespace cifar
