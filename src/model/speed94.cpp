// Speed94 layers, groups and whitening (see speed94.hpp).
#include "model/speed94.hpp"

#include <torch/nn/init.h>

#include "util/error.hpp"

namespace cifar {
namespace {

constexpr int64_t kWhitenChannels = 2 * 3 * 2 * 2;  // eigenvectors of 2x2x3 patches and their negatives
constexpr int64_t kWidths[] = {64, 256, 256};

torch::nn::Conv2d conv3x3(int64_t in, int64_t out) {
  auto conv = torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1).bias(false));
  torch::NoGradGuard no_grad;
  // Identity in the first `in` filters: the block starts close to passing its input on.
  torch::nn::init::dirac_(conv->weight.narrow(0, 0, std::min(in, out)));
  return conv;
}

torch::nn::BatchNorm2d batch_norm(int64_t channels, double momentum) {
  auto norm = torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(channels).momentum(momentum).eps(1e-12));
  norm->weight.set_requires_grad(false);
  return norm;
}

}  // namespace

Speed94Options Speed94Options::hiverge() {
  Speed94Options o;
  o.activation = Activation::Silu;
  o.norm_momentum = 1 - 0.5566;
  o.whiten_images = 960;
  o.whiten_bias_epochs = 0.19;
  o.whiten_bias_decays = true;
  o.norm_bias_lr_scale = 1.0;
  o.head_lr_scale = 0.5415 / 0.0573;  // the Hiverge record recipe's head and bias rates
  o.head_scale = 1.0 / 256.0;
  o.head_init_std = 1.0;
  return o;
}

torch::Tensor activate(const torch::Tensor& x, Activation a) {
  return a == Activation::Silu ? torch::silu(x) : torch::gelu(x);
}

Speed94Block::Speed94Block(int64_t in_channels, int64_t out_channels, const Speed94Options& options)
    : activation_(options.activation) {
  conv1_ = register_module("conv1", conv3x3(in_channels, out_channels));
  norm1_ = register_module("norm1", batch_norm(out_channels, options.norm_momentum));
  conv2_ = register_module("conv2", conv3x3(out_channels, out_channels));
  norm2_ = register_module("norm2", batch_norm(out_channels, options.norm_momentum));
}

torch::Tensor Speed94Block::forward(const torch::Tensor& x) {
  auto h = torch::max_pool2d(conv1_->forward(x), 2);
  h = activate(norm1_->forward(h), activation_);
  return activate(norm2_->forward(conv2_->forward(h)), activation_);
}

Speed94::Speed94(const Speed94Options& options) : Model("Speed94"), options_(options) {
  whiten_ = register_module("whiten", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, kWhitenChannels, 2).bias(true)));
  whiten_->weight.set_requires_grad(false);
  {
    torch::NoGradGuard no_grad;
    whiten_->bias.zero_();
  }
  block1_ = register_module("block1", std::make_shared<Speed94Block>(kWhitenChannels, kWidths[0], options));
  block2_ = register_module("block2", std::make_shared<Speed94Block>(kWidths[0], kWidths[1], options));
  block3_ = register_module("block3", std::make_shared<Speed94Block>(kWidths[1], kWidths[2], options));
  head_ = register_module("head",
                          torch::nn::Linear(torch::nn::LinearOptions(kWidths[2], cifar10::kNumClasses).bias(false)));
  if (options.head_init_std > 0) {
    torch::NoGradGuard no_grad;
    head_->weight.mul_(options.head_init_std / head_->weight.std());
  }
}

torch::Tensor Speed94::forward(const torch::Tensor& x) {
  auto h = torch::gelu(whiten_->forward(x));
  h = block3_->forward(block2_->forward(block1_->forward(h)));
  return head_->forward(pool_features(h, options_.head)) * options_.head_scale;
}

torch::Tensor pool_features(const torch::Tensor& map, HeadKind head) {
  // max over the flattened map, as the E1 record recipe's head: its gradient goes to one maximum, as max-pool's does
  if (head == HeadKind::GlobalMax) return std::get<0>(map.flatten(2).max(2));
  return torch::max_pool2d(map, 3).flatten(1);
}

void choose_head(Model& model, HeadKind head) {
  if (head == HeadKind::Pool3) return;
  auto* speed94 = dynamic_cast<Speed94*>(&model);
  CIFAR_CHECK(
      speed94, ConfigError,
      std::string("--head ") + to_string(head) + " is a choice of the speed94 models only; this model has one head");
  speed94->set_head(head);
}

std::vector<ParameterGroup> Speed94::parameter_groups() {
  const double nb = options_.norm_bias_lr_scale;
  ParameterGroup norm_biases{"norm biases", {}, nb, 1.0 / nb, -1};
  ParameterGroup whiten_bias{"whitening bias", {whiten_->bias}, 1.0, 1.0, options_.whiten_bias_epochs};
  whiten_bias.decays_over_training = options_.whiten_bias_decays;
  ParameterGroup weights{"weights", {}, 1.0, 1.0, -1};
  const double hs = options_.head_lr_scale;
  ParameterGroup head{"head", {}, hs, hs > 0 ? 1.0 / hs : 1.0, -1};
  for (const auto& item : named_parameters()) {
    const torch::Tensor& p = item.value();
    if (!p.requires_grad() || p.is_same(whiten_->bias)) continue;
    if (hs > 0 && p.is_same(head_->weight)) {
      head.parameters.push_back(p);
    } else {
      (item.key().find("norm") != std::string::npos ? norm_biases : weights).parameters.push_back(p);
    }
  }
  if (hs > 0) return {norm_biases, whiten_bias, weights, head};
  return {norm_biases, whiten_bias, weights};
}

torch::Tensor whitening_filters(const torch::Tensor& images, double eps, torch::Tensor* eigenvalues) {
  const int64_t n = images.size(0);
  // The patch covariance, summed over chunks of images in float64: all 2x2
  // patches of 5000 images would take half a gigabyte at once.
  torch::Tensor covariance = torch::zeros({12, 12}, torch::kFloat64);
  int64_t patches = 0;
  for (int64_t begin = 0; begin < n; begin += 500) {
    const auto chunk = images.narrow(0, begin, std::min<int64_t>(500, n - begin)).to(torch::kFloat64).contiguous();
    // [B,3,H-1,W-1,2,2] -> one row (c, dy, dx) per patch
    const auto flat = chunk.unfold(2, 2, 1).unfold(3, 2, 1).permute({0, 2, 3, 1, 4, 5}).reshape({-1, 12});
    covariance += flat.t().mm(flat);
    patches += flat.size(0);
  }
  covariance /= static_cast<double>(patches);
  const auto [values, vectors] = at::linalg_eigh(covariance, "U");  // increasing eigenvalues
  const auto decreasing = values.flip(0);
  const auto filters = vectors.t().flip(0).reshape({12, 3, 2, 2}) / (decreasing + eps).sqrt().view({12, 1, 1, 1});
  if (eigenvalues) *eigenvalues = decreasing;
  return torch::cat({filters, -filters}).to(torch::kFloat32);
}

void Speed94::initialize_from_data(const torch::Tensor& images) {
  const auto filters = whitening_filters(images.cpu());
  torch::NoGradGuard no_grad;
  whiten_->weight.copy_(filters.to(whiten_->weight.device()).contiguous(whiten_->weight.suggest_memory_format()));
}

}  // namespace cifar
