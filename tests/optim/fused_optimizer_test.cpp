// The graph-safe optimiser (--fused-optimizer) against LibTorch's eager
// torch::optim::Adam and SGD: the same model, gradients of the same loss of
// each copy's own weights (so any difference compounds), a one-cycle
// schedule written through Optimizer::set_learning_rate, two parameter groups
// with their multipliers (one of them frozen after "epoch" 0), 100 steps.
// Both must agree to float32 rounding. Checkpoints written by either
// optimiser continue in the other exactly as an uninterrupted run.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

#include "optim/fused_optimizer.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"

namespace cifar {
namespace {

constexpr int kSteps = 100;

// Weights of every shape a model has: a channels_last conv kernel, a matrix, a bias.
std::vector<torch::Tensor> initial_weights() {
  torch::manual_seed(7);
  return {torch::randn({8, 3, 3, 3}).contiguous(torch::MemoryFormat::ChannelsLast), torch::randn({10, 16}),
          torch::randn({10})};
}

struct TrainedRun {
  std::vector<torch::Tensor> weights;
  std::unique_ptr<Optimizer> optimizer;
};

TrainedRun make_run(OptimConfig c, bool fused) {
  c.fused = fused;
  TrainedRun r;
  for (const auto& w : initial_weights()) r.weights.push_back(w.clone().requires_grad_(true));
  ParameterGroup main{"main", {r.weights[0], r.weights[1]}, 1.0, 1.0, -1};
  ParameterGroup bias{"bias", {r.weights[2]}, 4.0, 0.5, 1};  // trains in epoch 0 only
  r.optimizer = std::make_unique<Optimizer>(c, std::vector<ParameterGroup>{main, bias});
  return r;
}

// A smooth, non-quadratic loss with a different curvature per tensor (0.1
// to 2.9): each step's gradient depends on the weights the step starts from,
// and the steps stay stable at these rates, so a rounding difference decays
// instead of being amplified into a different trajectory.
void backward(const TrainedRun& r) {
  torch::Tensor loss = torch::zeros({});
  for (size_t i = 0; i < r.weights.size(); ++i) {
    const torch::Tensor& w = r.weights[i];
    loss = loss + (0.5 * (1.0 + 0.5 * static_cast<double>(i)) * w * w + 0.1 * torch::sin(3.0 * w)).sum();
  }
  loss.backward();
}

ScheduleOptions one_cycle(double peak) { return ScheduleOptions{ScheduleKind::OneCycle, peak, kSteps, 10}; }

void train(TrainedRun& r, const ScheduleOptions& schedule, int from, int to) {
  for (int step = from; step < to; ++step) {
    r.optimizer->zero_grad();
    r.optimizer->set_learning_rate(learning_rate(schedule, step), step < kSteps / 2 ? 0 : 1);
    backward(r);
    r.optimizer->step();
  }
}

struct Difference {
  double abs = 0, rel = 0;
};

Difference difference(const TrainedRun& a, const TrainedRun& b) {
  Difference d;
  for (size_t i = 0; i < a.weights.size(); ++i) {
    const auto delta = (a.weights[i] - b.weights[i]).abs();
    d.abs = std::max(d.abs, delta.max().item<double>());
    d.rel = std::max(d.rel, (delta / b.weights[i].abs().clamp_min(1e-3)).max().item<double>());
  }
  return d;
}

OptimConfig adam() {
  OptimConfig c;
  c.optimizer = "adam";
  c.weight_decay = 0.01;
  return c;
}

OptimConfig sgd(bool nesterov) {
  OptimConfig c;
  c.optimizer = "sgd";
  c.momentum = 0.9;
  c.nesterov = nesterov;
  c.weight_decay = 5e-4;
  return c;
}

void expect_equal_to_eager(const OptimConfig& c, double peak, const char* name) {
  TrainedRun eager = make_run(c, false), fused = make_run(c, true);
  ASSERT_NE(dynamic_cast<GraphSafeStep*>(&fused.optimizer->torch_optimizer()), nullptr);
  train(eager, one_cycle(peak), 0, kSteps);
  train(fused, one_cycle(peak), 0, kSteps);
  const Difference d = difference(fused, eager);
  std::printf("%s after %d steps (%s): max abs difference %.3g, max rel difference %.3g\n", name, kSteps,
              GraphSafeStep::uses_fused_kernels() ? "ATen fused kernels" : "tensor-math fallback", d.abs, d.rel);
  EXPECT_LT(d.abs, 5e-6) << name;
  EXPECT_LT(d.rel, 1e-4) << name;
  // The runs moved, and the frozen group stopped: the comparison is not vacuous.
  EXPECT_GT((fused.weights[0] - initial_weights()[0]).abs().max().item<double>(), 0.05) << name;
  TrainedRun half = make_run(c, true);
  train(half, one_cycle(peak), 0, kSteps / 2);
  EXPECT_TRUE(torch::equal(half.weights[2], fused.weights[2])) << name << ": group 'bias' trains in epoch 0 only";
}

TEST(FusedOptimizer, AdamEqualsEagerAdamOver100ScheduledSteps) { expect_equal_to_eager(adam(), 0.05, "adam"); }
TEST(FusedOptimizer, SgdEqualsEagerSgdOver100ScheduledSteps) { expect_equal_to_eager(sgd(false), 0.05, "sgd"); }
TEST(FusedOptimizer, NesterovSgdEqualsEagerOver100ScheduledSteps) {
  expect_equal_to_eager(sgd(true), 0.05, "sgd nesterov");
}
TEST(FusedOptimizer, PlainSgdWithoutMomentumEqualsEager) {
  OptimConfig c = sgd(false);
  c.momentum = 0;
  expect_equal_to_eager(c, 0.05, "sgd no momentum");
}

std::string saved(TrainedRun& r) {
  torch::serialize::OutputArchive archive;
  r.optimizer->torch_optimizer().save(archive);
  std::ostringstream os;
  archive.save_to(os);
  return os.str();
}

void load(TrainedRun& r, const std::string& bytes) {
  torch::serialize::InputArchive archive;
  std::istringstream is(bytes);
  archive.load_from(is);
  r.optimizer->torch_optimizer().load(archive);
}

// Half a run in one optimiser, its state saved and loaded into a new run of
// the other (weights copied, as the checkpoint's model state is), then the
// second half: the same weights as the uninterrupted run of the second kind.
void expect_resumes_across(const OptimConfig& c, bool first_fused) {
  const bool second_fused = !first_fused;
  TrainedRun whole = make_run(c, second_fused);
  train(whole, one_cycle(0.05), 0, kSteps);
  TrainedRun first = make_run(c, first_fused);
  train(first, one_cycle(0.05), 0, kSteps / 2);
  TrainedRun second = make_run(c, second_fused);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < first.weights.size(); ++i) second.weights[i].copy_(first.weights[i]);
  }
  load(second, saved(first));
  train(second, one_cycle(0.05), kSteps / 2, kSteps);
  const Difference d = difference(second, whole);
  EXPECT_LT(d.abs, 5e-6) << c.optimizer << (first_fused ? " fused -> eager" : " eager -> fused");
}

TEST(FusedOptimizer, CheckpointsMoveBetweenEagerAndFused) {
  for (const OptimConfig& c : {adam(), sgd(true)}) {
    expect_resumes_across(c, true);
    expect_resumes_across(c, false);
  }
}

// The saved Adam step count is the device count, not the host's stale 0.
TEST(FusedOptimizer, SavedAdamStepCountIsTheDevicesCount) {
  TrainedRun r = make_run(adam(), true);
  train(r, one_cycle(0.05), 0, 7);
  TrainedRun eager = make_run(adam(), false);
  load(eager, saved(r));
  const auto& state = eager.optimizer->torch_optimizer().state();
  ASSERT_EQ(state.size(), 3u);
  for (const auto& [key, s] : state) EXPECT_EQ(static_cast<torch::optim::AdamParamState&>(*s).step(), 7);
}

}  // namespace
}  // namespace cifar
