// The fused relu(max_pool2d(x, 2)) against LibTorch's two operations: the same
// values and the same input gradient, with ties, zeros, negatives, NaNs and
// odd sizes, on one thread and several, and the LibTorch path for NCHW.
#include <gtest/gtest.h>

#include <cmath>

#include "model/pool_relu.hpp"

namespace cifar {
namespace {

struct Result {
  torch::Tensor out, grad;
};

// Forward and backward of `op` on a copy of x, with the given output gradient.
template <typename Op>
Result run(Op op, const torch::Tensor& x, const torch::Tensor& grad_out) {
  auto input = x.detach().clone(torch::MemoryFormat::Preserve).requires_grad_(true);
  auto out = op(input);
  out.backward(grad_out);
  return {out.detach(), input.grad()};
}

torch::Tensor reference(const torch::Tensor& x) { return torch::relu(torch::max_pool2d(x, 2)); }

// Small integers: many exact ties inside windows, zeros and negatives.
torch::Tensor tie_heavy(std::vector<int64_t> shape, bool with_nan) {
  auto x = torch::randint(-3, 4, shape).to(torch::kFloat);
  if (with_nan) x.view(-1).index_put_({torch::randint(0, x.numel(), {x.numel() / 7})}, std::nanf(""));
  return x.contiguous(torch::MemoryFormat::ChannelsLast);
}

void expect_identical(const torch::Tensor& got, const torch::Tensor& want, const char* what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  // allclose with zero tolerance: exact equality, NaN matching NaN.
  EXPECT_TRUE(torch::allclose(got, want, /*rtol=*/0, /*atol=*/0, /*equal_nan=*/true)) << what;
}

class FusedPoolRelu : public ::testing::TestWithParam<std::vector<int64_t>> {};

TEST_P(FusedPoolRelu, SameValuesAndGradientAsLibTorch) {
  torch::manual_seed(3);
  for (bool with_nan : {false, true}) {
    for (bool random_values : {false, true}) {
      auto x = random_values ? torch::randn(GetParam()).contiguous(torch::MemoryFormat::ChannelsLast)
                             : tie_heavy(GetParam(), with_nan);
      ASSERT_TRUE(fused_pool_relu_applies(x));
      auto shape = reference(x).sizes().vec();
      auto grad_out = torch::randn(shape);  // NCHW: the backward must accept any layout
      auto fused = run(max_pool2x2_relu, x, grad_out);
      auto want = run(reference, x, grad_out);
      expect_identical(fused.out, want.out, "forward");
      expect_identical(fused.grad, want.grad, "input gradient");
      EXPECT_TRUE(fused.grad.is_contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
}

// The convnet's two shapes, odd heights and widths, one channel, one image.
INSTANTIATE_TEST_SUITE_P(Shapes, FusedPoolRelu,
                         ::testing::Values(std::vector<int64_t>{4, 32, 30, 30}, std::vector<int64_t>{3, 64, 13, 13},
                                           std::vector<int64_t>{2, 5, 7, 9}, std::vector<int64_t>{1, 1, 2, 3},
                                           std::vector<int64_t>{2, 3, 5, 4}),
                         [](const auto& info) {  // ctest names: N_C_H_W
                           std::string name;
                           for (auto d : info.param) name += (name.empty() ? "" : "_") + std::to_string(d);
                           return name;
                         });

TEST(FusedPoolReluThreads, SameResultOnSeveralThreads) {
  torch::manual_seed(4);
  auto x = torch::randn({16, 32, 30, 30}).contiguous(torch::MemoryFormat::ChannelsLast);
  auto grad_out = torch::randn({16, 32, 15, 15});
  const int before = torch::get_num_threads();
  torch::set_num_threads(1);
  auto one = run(max_pool2x2_relu, x, grad_out);
  torch::set_num_threads(2);
  auto two = run(max_pool2x2_relu, x, grad_out);
  torch::set_num_threads(before);
  EXPECT_TRUE(torch::equal(one.out, two.out));
  EXPECT_TRUE(torch::equal(one.grad, two.grad));
}

TEST(FusedPoolReluFallback, OtherLayoutsAndTypesUseLibTorch) {
  auto nchw = torch::randn({2, 8, 6, 6});
  EXPECT_FALSE(fused_pool_relu_applies(nchw));
  EXPECT_FALSE(fused_pool_relu_applies(nchw.to(torch::kDouble).contiguous(torch::MemoryFormat::ChannelsLast)));
  EXPECT_TRUE(torch::equal(max_pool2x2_relu(nchw), reference(nchw)));
}

TEST(FusedPoolReluEval, WorksWithoutGradients) {
  torch::NoGradGuard no_grad;
  auto x = torch::randn({2, 4, 6, 6}).contiguous(torch::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(torch::equal(max_pool2x2_relu(x), reference(x)));
}

}  // namespace
}  // namespace cifar
