// ResNet-18 (CIFAR form) layers, forward pass and torchvision's initialisation.
#include "model/resnet.hpp"

#include <string>

namespace cifar {
namespace {

torch::nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

// torchvision's ResNet.__init__ re-initialises after building every layer:
// convolutions Kaiming-normal (fan_out, ReLU), batch norms weight 1 bias 0;
// the classifier keeps Linear's default. Walking modules() in the same
// pre-order as Python's self.modules() draws the same numbers for a seed.
void init_like_torchvision(torch::nn::Module& root) {
  torch::NoGradGuard no_grad;
  for (const auto& m : root.modules(/*include_self=*/false)) {
    if (auto* conv = m->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
      torch::nn::init::ones_(bn->weight);
      torch::nn::init::zeros_(bn->bias);
    }
  }
}

}  // namespace

BasicBlockImpl::BasicBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride) {
  conv1_ = register_module("conv1", conv3x3(in_channels, out_channels, stride));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(out_channels));
  conv2_ = register_module("conv2", conv3x3(out_channels, out_channels, 1));
  bn2_ = register_module("bn2", torch::nn::BatchNorm2d(out_channels));
  if (stride != 1 || in_channels != out_channels) {
    downsample_ = register_module(
        "downsample",
        torch::nn::Sequential(
            torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, out_channels, 1).stride(stride).bias(false)),
            torch::nn::BatchNorm2d(out_channels)));
  }
}

torch::Tensor BasicBlockImpl::forward(const torch::Tensor& x) {
  auto out = torch::relu(bn1_->forward(conv1_->forward(x)));
  out = bn2_->forward(conv2_->forward(out));
  const auto identity = downsample_ ? downsample_->forward(x) : x;
  return torch::relu(out + identity);
}

ResNet18::ResNet18() : Model("ResNet18") {
  constexpr int64_t kWidths[] = {64, 128, 256, 512};
  constexpr int kBlocksPerStage = 2;
  conv1_ = register_module("conv1", conv3x3(3, kWidths[0], 1));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(kWidths[0]));
  int64_t in = kWidths[0];
  for (int stage = 0; stage < 4; ++stage) {
    torch::nn::Sequential layer;
    for (int block = 0; block < kBlocksPerStage; ++block) {
      const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      layer->push_back(BasicBlock(in, kWidths[stage], stride));
      in = kWidths[stage];
    }
    layers_.emplace_back(register_module("layer" + std::to_string(stage + 1), layer));
  }
  fc_ = register_module("fc", torch::nn::Linear(in, cifar10::kNumClasses));
  init_like_torchvision(*this);
}

torch::Tensor ResNet18::forward(const torch::Tensor& x) {
  auto h = torch::relu(bn1_->forward(conv1_->forward(x)));
  for (auto& layer : layers_) h = layer->forward(h);
  h = torch::adaptive_avg_pool2d(h, {1, 1}).flatten(1);
  return fc_->forward(h);
}

}  // namespace cifar
