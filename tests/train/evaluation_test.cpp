// Evaluation at several world sizes: the distributed loss and accuracy equal
// one process scoring the whole split itself, with and without test-time
// augmentation, and the augmentation's views are the documented ones.
#include <gtest/gtest.h>

#include "comm/mpi_communicator.hpp"
#include "support/mpi_test_env.hpp"
#include "train/evaluation.hpp"

namespace cifar {
namespace {

MpiCommunicator& comm() {
  static MpiCommunicator c(test::env().comm());
  return c;
}

Split test_split(int64_t n) {
  torch::manual_seed(5);
  Split s;
  s.name = "test";
  s.images = torch::randint(0, 256, {n, 3, 32, 32}, torch::kLong).to(torch::kUInt8);
  s.labels = torch::randint(0, schema::kNumClasses, {n}, torch::kLong);
  return s;
}

// The same numbers computed by one process over the whole split, batch by batch.
Evaluation score_alone(Model& model, const Split& s, const EvaluationOptions& o) {
  torch::NoGradGuard no_grad;
  model.eval();
  const auto logits = tta_logits(model, normalize_batch(s.images, o.normalization), o.tta);
  const double loss = torch::nn::functional::cross_entropy(logits, s.labels).item<double>();
  const double accuracy = (logits.argmax(1) == s.labels).to(torch::kDouble).mean().item<double>();
  model.train();
  return {loss, accuracy};
}

TEST(Evaluation, DistributedEqualsOneProcessForEveryTta) {
  torch::manual_seed(1);  // the same weights on every rank
  auto model = make_model("convnet");
  const Split s = test_split(101);  // does not divide by 2 or 4: shards of unequal size
  for (TtaMode tta : {TtaMode::None, TtaMode::Mirror, TtaMode::MirrorTranslate}) {
    EvaluationOptions o;
    o.tta = tta;
    o.batch_size = 16;
    const Evaluation got = evaluate(*model, s, o, comm(), torch::kCPU);
    const Evaluation want = score_alone(*model, s, o);
    EXPECT_NEAR(got.loss, want.loss, 1e-5 * want.loss) << to_string(tta);
    EXPECT_DOUBLE_EQ(got.accuracy, want.accuracy) << to_string(tta);
  }
}

TEST(Evaluation, TtaViewsAreTheMirrorAndOnePixelShifts) {
  torch::manual_seed(2);
  auto model = make_model("convnet");
  torch::NoGradGuard no_grad;
  model->eval();
  const auto x = torch::randn({2, 3, 32, 32});
  const auto f = [&](const torch::Tensor& v) { return model->forward(v); };
  const auto mirror = [&](const torch::Tensor& v) { return 0.5 * f(v) + 0.5 * f(v.flip({3})); };
  EXPECT_TRUE(torch::allclose(tta_logits(*model, x, TtaMode::Mirror), mirror(x)));
  const auto padded = torch::reflection_pad2d(x, {1, 1, 1, 1});
  const auto up_left = padded.narrow(2, 0, 32).narrow(3, 0, 32);
  const auto down_right = padded.narrow(2, 2, 32).narrow(3, 2, 32);
  const auto want = 0.5 * mirror(x) + 0.25 * mirror(up_left) + 0.25 * mirror(down_right);
  EXPECT_TRUE(torch::allclose(tta_logits(*model, x, TtaMode::MirrorTranslate), want, 1e-5, 1e-6));
}

}  // namespace
}  // namespace cifar
