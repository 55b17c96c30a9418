// Speed94: the network of the CIFAR-10 speed-record recipe that reaches 94% test
// accuracy in about ten epochs (Keller Jordan's airbench94, arXiv 2404.00498),
// written from its published description:
//
//   whiten   2x2 convolution, 3 -> 24 channels, no padding, frozen weights set
//            from the training images (initialize_from_data): the
//            eigenvectors of the covariance of 2x2 patches, scaled by
//            1/sqrt(eigenvalue + 5e-4), and their negatives; its bias trains
//            for the first kWhitenBiasEpochs epochs only. Then GELU.
//   block1..3  (3x3 conv, max-pool 2, BatchNorm, GELU, 3x3 conv, BatchNorm,
//            GELU) with 64, 256, 256 channels; convolutions without bias,
//            identity ("Dirac") initialised in their first input-channel
//            filters; BatchNorm weights frozen at 1, biases trained with a
//            kNormBiasLrScale times larger learning rate (and as much smaller
//            weight decay); BatchNorm momentum 0.6 (PyTorch's 0.4), eps 1e-12.
//   head     max-pool 3, a 256 -> 10 linear layer without bias, times 1/9.
//            With HeadKind::GlobalMax (--head global-max, the E1 record
//            recipe's head) the maximum over the whole feature map instead: the
//            same at 32 px, where the map is 3x3, and defined at any input
//            size (a 24 px image leaves a 2x2 map, too small for max-pool 3).
//
// speed94_muon is the same network as the Hiverge record (hiverge/cifar10-
// speedrun) trains it with Muon (Speed94Options::hiverge()): SiLU in the
// blocks (GELU after the whitening), BatchNorm momentum 0.4434 (the Hiverge record recipe's
// 0.5566), whitening from the first 960 images, its bias trained for the first
// 0.19 epoch with a rate falling linearly to 0 there, the norm biases at the
// base rate, and the head a group of its own (9.4503 x the rate, as much
// smaller weight decay), initialised to weights of standard deviation 1 and
// times 1/256.
#pragma once

#include "config/choices.hpp"
#include "model/model.hpp"

namespace cifar {

enum class Activation { Gelu, Silu };

struct Speed94Options {
  Activation activation = Activation::Gelu;  // in the blocks
  double norm_momentum = 0.4;                // PyTorch's convention (the record recipes' 1 - momentum)
  int64_t whiten_images = 5000;              // training images the whitening is computed from
  double whiten_bias_epochs = 3;             // ParameterGroup::train_epochs of the whitening bias
  bool whiten_bias_decays = false;           // ... falling linearly to 0 over them
  double norm_bias_lr_scale = 64.0;          // and 1 / this times the weight decay
  double head_lr_scale = 0;                  // > 0: the head is a group of its own with this multiplier
  double head_scale = 1.0 / 9.0;             // the logits' factor
  double head_init_std = 0;                  // > 0: the head's weights rescaled to this standard deviation
  HeadKind head = HeadKind::Pool3;           // the pooling before the head's linear layer

  static Speed94Options airbench() { return {}; }
  static Speed94Options hiverge();
};

class Speed94Block : public torch::nn::Module {
 public:
  Speed94Block(int64_t in_channels, int64_t out_channels, const Speed94Options& options = {});
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d norm1_{nullptr}, norm2_{nullptr};
  Activation activation_;
};

class Speed94 : public Model {
 public:
  static constexpr int kWhitenBiasEpochs = 3;
  static constexpr double kNormBiasLrScale = 64.0;
  static constexpr int64_t kWhitenImages = 5000;  // training images the whitening is computed from

  explicit Speed94(const Speed94Options& options = Speed94Options::airbench());
  torch::Tensor forward(const torch::Tensor& x) override;
  std::vector<ParameterGroup> parameter_groups() override;
  int64_t initialization_images() const override { return options_.whiten_images; }
  // Sets the whitening filters from `images`.
  void initialize_from_data(const torch::Tensor& images) override;
  void set_head(HeadKind head) { options_.head = head; }

 private:
  Speed94Options options_;
  torch::nn::Conv2d whiten_{nullptr};
  std::shared_ptr<Speed94Block> block1_, block2_, block3_;
  torch::nn::Linear head_{nullptr};
};

// The head's pooling of the last block's map [B,C,H,W] -> features [B,C]:
// Pool3 max-pools 3x3 windows (one window at 32 px: C features), GlobalMax
// takes each channel's maximum over the whole map, whatever its size.
torch::Tensor pool_features(const torch::Tensor& map, HeadKind head);

// --head for `model`: ConfigError unless it is a speed94 model (the other
// models have one head) or `head` is the default.
void choose_head(Model& model, HeadKind head);

// The activation `a` of `x`.
torch::Tensor activate(const torch::Tensor& x, Activation a);

// The whitening filters for 2x2 patches of `images` ([N,3,H,W] float):
// [24,3,2,2], rows 0..11 the covariance's eigenvectors by decreasing
// eigenvalue, each divided by sqrt(eigenvalue + eps), rows 12..23 their
// negatives. `eigenvalues`, when given, receives the 12 eigenvalues (decreasing).
torch::Tensor whitening_filters(const torch::Tensor& images, double eps = 5e-4, torch::Tensor* eigenvalues = nullptr);

}  // namespace cifar
