// Distributed evaluation with known answers, at np 1, 2 and 3: a model that
// calls every image by its brightest channel (classes 0..2) scores images
// built so that the confusion matrix, the loss and the test-time-augmented
// logits are known in closed form; every rank must return them.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "comm/mpi_communicator.hpp"
#include "support/mpi_test_env.hpp"
#include "train/evaluation.hpp"

namespace cifar {
namespace {

constexpr int kClasses = schema::kNumClasses;

MpiCommunicator& comm() {
  static MpiCommunicator c(test::env().comm());
  return c;
}

// Logits: the mean of each channel for classes 0..2, and 0 for the others.
class BrightestChannel : public Model {
 public:
  BrightestChannel() : Model("brightest_channel") {}
  torch::Tensor forward(const torch::Tensor& x) override {
    const torch::Tensor means = x.mean({2, 3});
    return torch::cat({means, torch::zeros({x.size(0), kClasses - 3})}, 1);
  }
};

// Image i: channel i % 3 at 255 everywhere (normalised: 1), the others 0
// (normalised: -1); label i % 10. 37 images: shards of unequal size.
Split known_split() {
  constexpr int64_t n = 37;
  Split s;
  s.name = "test";
  s.images = torch::zeros({n, 3, 32, 32}, torch::kUInt8);
  s.labels = torch::arange(n, torch::kLong) % kClasses;
  for (int64_t i = 0; i < n; ++i) s.images[i][i % 3].fill_(255);
  return s;
}

// The expected mean loss when the bright channel's logit is `bright` and
// the other two channels' are -1, classes 3..9 at 0.
double expected_loss(const Split& s, double bright) {
  double sum = 0;
  for (int64_t i = 0; i < s.size(); ++i) {
    std::vector<double> logits(kClasses, 0.0);
    for (int c = 0; c < 3; ++c) logits[c] = c == i % 3 ? bright : -1.0;
    double z = 0;
    for (double l : logits) z += std::exp(l);
    sum += std::log(z) - logits[i % kClasses];
  }
  return sum / static_cast<double>(s.size());
}

void expect_known_confusion(const Evaluation& e, const Split& s) {
  ASSERT_EQ(e.samples, s.size());
  int64_t correct = 0;
  for (int t = 0; t < kClasses; ++t) {
    for (int p = 0; p < kClasses; ++p) {
      int64_t n = 0;  // images with label t whose bright channel is p
      for (int64_t i = 0; i < s.size(); ++i) n += (i % kClasses == t && i % 3 == p);
      EXPECT_EQ(e.count(t, p), n) << "true " << t << ", predicted " << p;
      if (t == p) correct += n;
    }
  }
  EXPECT_EQ(e.correct(), correct);
  EXPECT_DOUBLE_EQ(e.accuracy, static_cast<double>(correct) / static_cast<double>(s.size()));
  EXPECT_EQ(e.class_count(0), 4);  // labels 0, 10, 20, 30
  EXPECT_DOUBLE_EQ(e.class_accuracy(0), 2.0 / 4.0);  // images 0 and 30 are channel 0
  EXPECT_EQ(e.class_count(7), 3);
  EXPECT_DOUBLE_EQ(e.class_accuracy(7), 0.0);
}

TEST(Evaluation, ConfusionAndLossAreKnownOnEveryRank) {
  const Split s = known_split();
  BrightestChannel model;
  EvalOptions options;
  options.batch_size = 4;  // several batches per rank
  const Evaluation e = evaluate(model, s, Normalization::recipe(), comm(), options);
  expect_known_confusion(e, s);
  EXPECT_NEAR(e.loss, expected_loss(s, 1.0), 1e-6);
  EXPECT_TRUE(model.is_training()) << "evaluate leaves the model in training mode";
}

TEST(Evaluation, TestTimeViewsAverageTheirLogits) {
  const std::vector<EvalView> views = tta_views();
  ASSERT_EQ(views.size(), 10u);
  EXPECT_TRUE(views[0].dy == 0 && views[0].dx == 0 && !views[0].flip) << "the image itself comes first";
  // Mirroring keeps every channel's mean; a 2-pixel shift brings in two rows
  // or columns of zero pixels (normalised -1): the bright channel's mean is
  // (30 - 2) / 32, the dark channels' stay -1. Two unshifted views of ten:
  const double bright = (2 * 1.0 + 8 * (28.0 / 32.0)) / 10;
  const Split s = known_split();
  BrightestChannel model;
  EvalOptions options;
  options.batch_size = 5;
  options.views = views;
  const Evaluation e = evaluate(model, s, Normalization::recipe(), comm(), options);
  expect_known_confusion(e, s);
  EXPECT_NEAR(e.loss, expected_loss(s, bright), 1e-6);
}

}  // namespace
}  // namespace cifar
