// compare_models(): known differences give their relative size, and a model
// holding NaN or infinity is never the same as another, whatever the
// tolerance (a NaN difference compares false with any rtol).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "outputs/model_comparison.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

std::shared_ptr<Model> convnet(uint64_t seed) {
  torch::manual_seed(seed);
  return make_model("convnet");
}

// The first parameter of `model`, for editing in place.
torch::Tensor first_parameter(Model& model) { return model.parameters().front(); }

TEST(ModelComparison, AModelIsTheSameAsItsCopyAtRtolZero) {
  const auto a = convnet(1), b = convnet(1);
  const ModelComparison c = compare_models(*a, *b);
  EXPECT_TRUE(c.finite);
  EXPECT_EQ(c.largest, 0.0);
  EXPECT_TRUE(c.same(0.0));
  EXPECT_EQ(c.tensors.size(), state_entries(*a).size());
}

TEST(ModelComparison, AKnownChangeIsMeasuredRelativeToTheFirstModelsLargestValue) {
  const auto a = convnet(1), b = convnet(1);
  torch::NoGradGuard no_grad;
  const torch::Tensor p = first_parameter(*b);
  const double largest = first_parameter(*a).abs().max().item<double>();
  p.view(-1)[0] += static_cast<float>(0.5 * largest);  // the difference: half the largest value
  const ModelComparison c = compare_models(*a, *b);
  EXPECT_NEAR(c.largest, 0.5, 1e-6);
  EXPECT_NEAR(c.tensors.front().relative, 0.5, 1e-6);
  EXPECT_EQ(c.tensors[1].relative, 0.0);
  EXPECT_TRUE(c.same(0.6));
  EXPECT_FALSE(c.same(0.4));
}

TEST(ModelComparison, NanOrInfinityInEitherModelIsNeverTheSame) {
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()}) {
    for (const bool in_first : {true, false}) {
      const auto a = convnet(1), b = convnet(1);
      {
        torch::NoGradGuard no_grad;
        first_parameter(in_first ? *a : *b).view(-1)[3] = bad;
      }
      const ModelComparison c = compare_models(*a, *b);
      EXPECT_FALSE(c.finite) << bad << (in_first ? " in the first" : " in the second");
      EXPECT_FALSE(c.tensors.front().finite);
      EXPECT_TRUE(std::isnan(c.tensors.front().relative));
      EXPECT_FALSE(c.same(0.0));
      EXPECT_FALSE(c.same(1e300)) << "no tolerance makes a non-finite model the same";
    }
  }
  // The same NaN in both: still not a model that any comparison passes.
  const auto a = convnet(1), b = convnet(1);
  {
    torch::NoGradGuard no_grad;
    first_parameter(*a).view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
    first_parameter(*b).view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
  }
  EXPECT_FALSE(compare_models(*a, *b).same(1.0));
}

TEST(ModelComparison, AnotherArchitectureIsRefused) {
  const auto a = convnet(1);
  torch::manual_seed(1);
  const auto b = make_model("resnet18");
  EXPECT_THROW(compare_models(*a, *b), ConfigError);
}

}  // namespace
}  // namespace cifar
