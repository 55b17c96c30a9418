// Speed94: the network of the CIFAR-10 speed recipe that reaches 94% test
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
#pragma once

#include "model/model.hpp"

namespace cifar {

class Speed94Block : public torch::nn::Module {
 public:
  Speed94Block(int64_t in_channels, int64_t out_channels);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d norm1_{nullptr}, norm2_{nullptr};
};

class Speed94 : public Model {
 public:
  static constexpr int kWhitenBiasEpochs = 3;
  static constexpr double kNormBiasLrScale = 64.0;
  static constexpr int64_t kWhitenImages = 5000;  // training images the whitening is computed from

  Speed94();
  torch::Tensor forward(const torch::Tensor& x) override;
  std::vector<ParameterGroup> parameter_groups() override;
  int64_t initialization_images() const override { return kWhitenImages; }
  // Sets the whitening filters from `images`.
  void initialize_from_data(const torch::Tensor& images) override;

 private:
  torch::nn::Conv2d whiten_{nullptr};
  std::shared_ptr<Speed94Block> block1_, block2_, block3_;
  torch::nn::Linear head_{nullptr};
};

// The whitening filters for 2x2 patches of `images` ([N,3,H,W] float):
// [24,3,2,2], rows 0..11 the covariance's eigenvectors by decreasing
// eigenvalue, each divided by sqrt(eigenvalue + eps), rows 12..23 their
// negatives. `eigenvalues`, when given, receives the 12 eigenvalues (decreasing).
torch::Tensor whitening_filters(const torch::Tensor& images, double eps = 5e-4, torch::Tensor* eigenvalues = nullptr);

}  // namespace cifar
