// ConvNet layers and forward pass; see convnet.hpp.
#include "model/convnet.hpp"

#include "model/pool_relu.hpp"

namespace cifar {
namespace {
constexpr int64_t kFlatFeatures = 64 * 6 * 6;  // conv2's output after two 2x2 pools of a 32x32 image
}

// Registration order fixes both the state_dict order and the order in which
// the default initialisation draws from the generator; it matches the Python
// class so that the same seed gives the same weights.
ConvNet::ConvNet() : Model("ConvNet") {
  conv1_ = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 32, 3).stride(1)));
  conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).stride(1)));
  fc1_ = register_module("fc1", torch::nn::Linear(kFlatFeatures, 128));
  fc2_ = register_module("fc2", torch::nn::Linear(128, cifar10::kNumClasses));
}

torch::Tensor ConvNet::forward(const torch::Tensor& x) {
  // The PyTorch DDP recipe computes max_pool(relu(conv)); relu(max_pool(conv)) is the same
  // number for every element (relu is monotonic, so it commutes with max, also
  // in floating point and for ties) and the same gradient, but runs relu and
  // its backward on a quarter of the elements. On CPUs in channels_last the
  // two run as one fused pass (pool_relu.hpp), with the same results.
  auto h = max_pool2x2_relu(conv1_->forward(x));
  h = max_pool2x2_relu(conv2_->forward(h));
  // flatten (a reshape) rather than the PyTorch DDP recipe's view: a channels_last
  // activation is not viewable as [B, 2304] and must be copied.
  h = h.flatten(1);
  return fc2_->forward(torch::relu(fc1_->forward(h)));
}

}  // namespace cifar
