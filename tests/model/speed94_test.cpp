// The speed recipe's network: shapes, which parameters train and how (the
// groups), the identity initialisation, and the whitening filters checked
// against a covariance computed directly, patch by patch.
#include <gtest/gtest.h>

#include "model/speed94.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

TEST(Speed94, LogitsAndParameterGroups) {
  torch::manual_seed(0);
  Speed94 net;
  EXPECT_EQ(net.forward(torch::randn({4, 3, 32, 32})).sizes().vec(), (std::vector<int64_t>{4, cifar10::kNumClasses}));
  const auto groups = net.parameter_groups();
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].parameters.size(), 6u) << "two BatchNorm biases in each of three blocks";
  EXPECT_DOUBLE_EQ(groups[0].lr_scale, Speed94::kNormBiasLrScale);
  EXPECT_DOUBLE_EQ(groups[0].weight_decay_scale, 1.0 / Speed94::kNormBiasLrScale);
  ASSERT_EQ(groups[1].parameters.size(), 1u);
  EXPECT_EQ(groups[1].train_epochs, Speed94::kWhitenBiasEpochs);
  EXPECT_EQ(groups[2].parameters.size(), 7u) << "six 3x3 convolutions and the head";
  // Frozen: the whitening weights and the BatchNorm weights, in no group.
  size_t frozen = 0;
  for (const auto& p : net.parameters()) frozen += p.requires_grad() ? 0 : 1;
  EXPECT_EQ(frozen, 1u + 6u);
  EXPECT_EQ(trainable_parameters(groups).size() + frozen, net.parameters().size());
}

TEST(Speed94, ConvolutionsStartAsIdentityInTheirFirstFilters) {
  Speed94 net;
  const auto params = net.named_parameters();
  const auto w = params["block2.conv1.weight"];  // 64 -> 256
  for (int64_t o : {0, 17, 63}) {
    EXPECT_EQ(w[o][o][1][1].item<float>(), 1.0f);
    EXPECT_EQ(w[o].abs().sum().item<float>(), 1.0f) << "only the centre tap of its own channel";
  }
}

// The covariance of all 2x2 patches (c, dy, dx order), one patch at a time.
torch::Tensor direct_patch_covariance(const torch::Tensor& images) {
  const auto x = images.to(torch::kFloat64);
  auto acc = x.accessor<double, 4>();
  std::vector<double> sum(144, 0.0);
  int64_t count = 0;
  for (int64_t n = 0; n < x.size(0); ++n)
    for (int64_t y = 0; y + 1 < x.size(2); ++y)
      for (int64_t xx = 0; xx + 1 < x.size(3); ++xx, ++count) {
        double p[12];
        for (int c = 0; c < 3; ++c)
          for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx) p[c * 4 + dy * 2 + dx] = acc[n][c][y + dy][xx + dx];
        for (int i = 0; i < 12; ++i)
          for (int j = 0; j < 12; ++j) sum[i * 12 + j] += p[i] * p[j];
      }
  return torch::tensor(sum, torch::kFloat64).view({12, 12}) / static_cast<double>(count);
}

TEST(Speed94, WhiteningFiltersDecorrelateThePatches) {
  torch::manual_seed(3);
  // Correlated channels, as in real images: a shared component plus noise.
  const auto base = torch::rand({20, 1, 9, 9});
  const auto images = base.expand({20, 3, 9, 9}) * 0.8 + torch::rand({20, 3, 9, 9}) * 0.2;
  const double eps = 5e-4;
  torch::Tensor eigenvalues;
  const auto filters = whitening_filters(images, eps, &eigenvalues);
  ASSERT_EQ(filters.sizes().vec(), (std::vector<int64_t>{24, 3, 2, 2}));
  const auto covariance = direct_patch_covariance(images);
  // Eigenvalues of the directly computed covariance, largest first.
  const auto expected = std::get<0>(at::linalg_eigh(covariance, "U")).flip(0);
  EXPECT_TRUE(torch::allclose(eigenvalues, expected, 1e-9, 1e-12)) << eigenvalues << expected;
  // Filter responses: F C F^T = diag(lambda / (lambda + eps)).
  const auto f = filters.narrow(0, 0, 12).reshape({12, 12}).to(torch::kFloat64);
  const auto response = f.mm(covariance).mm(f.t());
  const auto want = torch::diag(expected / (expected + eps));
  EXPECT_TRUE(torch::allclose(response, want, 1e-4, 1e-5)) << response;
  EXPECT_TRUE(torch::equal(filters.narrow(0, 12, 12), -filters.narrow(0, 0, 12)));
}

TEST(Speed94, InitializeFromDataSetsTheWhiteningWeights) {
  torch::manual_seed(4);
  Speed94 net;
  const auto images = torch::rand({6, 3, 32, 32});
  net.initialize_from_data(images);
  EXPECT_TRUE(torch::equal(net.named_parameters()["whiten.weight"], whitening_filters(images)));
  EXPECT_EQ(net.initialization_images(), Speed94::kWhitenImages);
}

// The global max-pool head: each channel's maximum over the whole map,
// whatever its size; equal to max-pool 3 on the 3x3 map a 32 px image leaves.
TEST(Speed94, GlobalMaxHeadTakesEachChannelsMaximumAtAnySize) {
  const torch::Tensor small = torch::tensor({1.f, 7.f, 3.f, 2.f, -4.f, -1.f, -2.f, -3.f}).view({1, 2, 2, 2});
  torch::Tensor large = torch::full({1, 2, 5, 5}, -9.f);
  large[0][0][4][1] = 7.f;
  large[0][1][2][3] = -1.f;
  const torch::Tensor want = torch::tensor({7.f, -1.f}).view({1, 2});
  EXPECT_TRUE(torch::equal(pool_features(small, HeadKind::GlobalMax), want));
  EXPECT_TRUE(torch::equal(pool_features(large, HeadKind::GlobalMax), want));
  const torch::Tensor map3 = torch::randn({4, 8, 3, 3});
  EXPECT_TRUE(torch::equal(pool_features(map3, HeadKind::GlobalMax), pool_features(map3, HeadKind::Pool3)));
}

TEST(Speed94, GlobalMaxHeadTakesSmallerImagesAndIsPool3At32Pixels) {
  torch::manual_seed(1);
  Speed94 pool3(Speed94Options::hiverge());
  torch::manual_seed(1);
  Speed94 global(Speed94Options::hiverge());
  choose_head(global, HeadKind::GlobalMax);
  const torch::Tensor x = torch::randn({2, 3, 32, 32});
  EXPECT_TRUE(torch::equal(global.forward(x), pool3.forward(x)));
  for (int64_t size : {24, 28})
    EXPECT_EQ(global.forward(torch::randn({2, 3, size, size})).sizes().vec(), (std::vector<int64_t>{2, 10})) << size;
  EXPECT_THROW(pool3.forward(torch::randn({2, 3, 24, 24})), c10::Error) << "a 2x2 map is too small for max-pool 3";
  auto other = make_model("convnet");
  EXPECT_THROW(choose_head(*other, HeadKind::GlobalMax), ConfigError);
  EXPECT_NO_THROW(choose_head(*other, HeadKind::Pool3));
}

}  // namespace
}  // namespace cifar
