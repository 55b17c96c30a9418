// Lookahead with known numbers: the decay schedule, when it pulls, what the
// weights and the average become, and the run's end on the average.
#include <gtest/gtest.h>

#include <cmath>

#include "optim/lookahead.hpp"

namespace cifar {
namespace {

// A one-parameter model whose weight the test sets by hand.
class Scalar : public Model {
 public:
  Scalar() : Model("Scalar") { w = register_parameter("w", torch::zeros({1})); }
  torch::Tensor forward(const torch::Tensor& x) override { return x * w; }
  torch::Tensor w;
};

void set(Scalar& m, float v) {
  torch::NoGradGuard no_grad;
  m.w.fill_(v);
}

TEST(Lookahead, DecayGrowsWithTheCubeOfProgress) {
  EXPECT_DOUBLE_EQ(Lookahead::decay(5, 0, 100), 0.0);
  EXPECT_NEAR(Lookahead::decay(5, 50, 100), std::pow(0.95, 5) * 0.125, 1e-15);
  EXPECT_NEAR(Lookahead::decay(5, 100, 100), std::pow(0.95, 5), 1e-15);
}

TEST(Lookahead, PullsEveryNStepsAndEndsOnTheAverage) {
  Scalar m;
  set(m, 1.0f);
  Lookahead la(m, 2, 4);  // average starts at 1
  set(m, 3.0f);
  la.after_step(1);  // not a multiple of 2: nothing
  EXPECT_FLOAT_EQ(m.w.item<float>(), 3.0f);
  la.after_step(2);  // decay d = 0.95^2 * (2/4)^3; average = d * 1 + (1 - d) * 3
  const double d = std::pow(0.95, 2) / 8;
  const float pulled = static_cast<float>(d * 1 + (1 - d) * 3);
  EXPECT_FLOAT_EQ(m.w.item<float>(), pulled);
  EXPECT_FLOAT_EQ(la.average()[0].item<float>(), pulled);
  set(m, 10.0f);
  la.finish();  // decay 1: the weights become the average
  EXPECT_FLOAT_EQ(m.w.item<float>(), pulled);
}

TEST(Lookahead, OffDoesNothing) {
  Scalar m;
  set(m, 2.0f);
  Lookahead la(m, 0, 10);
  EXPECT_FALSE(la.enabled());
  set(m, 5.0f);
  la.after_step(5);
  la.finish();
  EXPECT_FLOAT_EQ(m.w.item<float>(), 5.0f);
}

// The tail average (the record recipe's: E1 starts it 20 steps before the
// end, pulls every 4 with decay 0.7): over the last 6 of 10 steps, every 2,
// decay 0.5, with the weight at step s set to s before each call.
TEST(Lookahead, TailAverageStartsAtTheWeightsAndPullsWithAConstantDecay) {
  Scalar m;
  set(m, 100.0f);
  Lookahead la(m, LookaheadOptions{2, 0.5, 6}, 10);  // starts after step 4
  for (long s = 1; s <= 3; ++s) {
    set(m, static_cast<float>(s));
    la.after_step(s);
    EXPECT_FLOAT_EQ(m.w.item<float>(), static_cast<float>(s)) << "before the tail: untouched";
  }
  set(m, 4.0f);
  la.after_step(4);  // average = 4 (not the initial 100)
  EXPECT_FLOAT_EQ(la.average()[0].item<float>(), 4.0f);
  EXPECT_FLOAT_EQ(m.w.item<float>(), 4.0f);
  set(m, 5.0f);
  la.after_step(5);
  EXPECT_FLOAT_EQ(m.w.item<float>(), 5.0f);
  set(m, 6.0f);
  la.after_step(6);  // 0.5 x 4 + 0.5 x 6
  EXPECT_FLOAT_EQ(m.w.item<float>(), 5.0f);
  set(m, 8.0f);  // trained on from 5
  la.after_step(7);
  set(m, 9.0f);
  la.after_step(8);  // 0.5 x 5 + 0.5 x 9
  EXPECT_FLOAT_EQ(m.w.item<float>(), 7.0f);
  set(m, 11.0f);
  la.after_step(9);
  la.after_step(10);  // 0.5 x 7 + 0.5 x 11
  EXPECT_FLOAT_EQ(m.w.item<float>(), 9.0f);
  la.finish();  // the last step pulled: the weights are the average already
  EXPECT_FLOAT_EQ(m.w.item<float>(), 9.0f);
  EXPECT_FLOAT_EQ(la.average()[0].item<float>(), 9.0f);
}

}  // namespace
}  // namespace cifar
