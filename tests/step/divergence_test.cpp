// The divergence guard's verdicts on known gradients: stop ends the run on
// every rank with exit code 5 naming the first bad step, at once where the
// verdict is read every step and at the next synchronising point where it is
// kept on the device; skip skips and counts; parameters that overflowed from
// a finite gradient stop either policy; an epoch past --max-loss or
// --max-skipped-fraction stops the run.
#include "step/divergence.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "comm/agreement.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

const torch::Tensor kFinite = torch::tensor(true);
const torch::Tensor kNotFinite = torch::tensor(false);

// The exit code the run ended with, or 0 when it went on.
int stop_code(const std::function<void()>& f) {
  try {
    f();
  } catch (const AgreedFailure& e) {
    return e.exit_code();
  }
  return 0;
}

TEST(Divergence, StopEndsTheRunAtTheFirstNonFiniteStepAndAppliesNothing) {
  DivergenceGuard guard(OnNonFinite::Stop, /*every_step=*/true, torch::kCPU, "a lower --lr");
  EXPECT_TRUE(guard.admit(kFinite, 0));
  EXPECT_EQ(stop_code([&] { guard.require_finite(false); }), 0);
  EXPECT_FALSE(guard.admit(kNotFinite, 1)) << "the bad update is not applied";
  EXPECT_EQ(stop_code([&] { guard.require_finite(false); }), kExitDiverged);
  EXPECT_FALSE(guard.admit(kNotFinite, 2));
  EXPECT_EQ(guard.skipped(), 0);
}

TEST(Divergence, DeferredVerdictStaysOnTheDeviceUntilASynchronisingPoint) {
  DivergenceGuard guard(OnNonFinite::Stop, /*every_step=*/false, torch::kCPU, "a lower --lr");
  EXPECT_TRUE(guard.admit(kFinite, 0));
  EXPECT_TRUE(guard.admit(kNotFinite, 1)) << "deferred: applied, the run stops before anything is written";
  EXPECT_TRUE(guard.admit(kNotFinite, 2));
  EXPECT_EQ(stop_code([&] { guard.require_finite(false); }), 0) << "nothing read back yet";
  try {
    guard.require_finite(true);
    FAIL() << "the run went on";
  } catch (const AgreedFailure& e) {
    EXPECT_EQ(e.exit_code(), kExitDiverged);
  }
}

TEST(Divergence, SkipCountsAndNeverStopsOnGradients) {
  DivergenceGuard guard(OnNonFinite::Skip, /*every_step=*/false, torch::kCPU,
                        "a lower --lr");  // skip reads every step anyway
  EXPECT_TRUE(guard.admit(kFinite, 0));
  EXPECT_FALSE(guard.admit(kNotFinite, 1));
  EXPECT_FALSE(guard.admit(kNotFinite, 2));
  EXPECT_TRUE(guard.admit(kFinite, 3));
  EXPECT_EQ(guard.skipped(), 2);
  EXPECT_EQ(stop_code([&] { guard.require_finite(true); }), 0);
  guard.restore_skipped(10);  // from a checkpoint
  EXPECT_FALSE(guard.admit(kNotFinite, 4));
  EXPECT_EQ(guard.skipped(), 11);
}

TEST(Divergence, NonFiniteParametersStopEitherPolicy) {
  const std::vector<torch::Tensor> good = {torch::ones({3}), torch::zeros({2, 2})};
  std::vector<torch::Tensor> bad = {torch::ones({3}), torch::zeros({2, 2})};
  bad[1][1][0] = std::numeric_limits<float>::infinity();
  for (OnNonFinite policy : {OnNonFinite::Stop, OnNonFinite::Skip}) {
    const DivergenceGuard guard(policy, true, torch::kCPU, "a lower --lr");
    EXPECT_EQ(stop_code([&] { guard.require_finite_parameters(good, 5); }), 0);
    EXPECT_EQ(stop_code([&] { guard.require_finite_parameters(bad, 5); }), kExitDiverged);
  }
}

// An epoch's result against --max-loss and --max-skipped-fraction: known
// losses and counts, each limit at its boundary.
TEST(Divergence, EpochResultsPastTheLimitsFailTheRun) {
  const TrainingConfig limits;  // --max-loss 100, --max-skipped-fraction 0.5
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(epoch_problem(limits, {0, 16, 0, 2.3, true, 2.2}), "");
  EXPECT_EQ(epoch_problem(limits, {0, 16, 8, 100, true, 100}), "") << "at the limits: sound";
  EXPECT_EQ(epoch_problem(limits, {3, 16, 0, 5e30, true, 2.0}),
            "epoch 3 ended with a mean training loss of 5e+30, above --max-loss 100");
  EXPECT_EQ(epoch_problem(limits, {0, 32, 30, 2.0, true, nan}),
            "epoch 0 ended with a mean test loss that is not finite (NaN), and 30 of the run's 32 optimiser steps so "
            "far skipped for a non-finite gradient (94%, more than --max-skipped-fraction 0.5)");
  EXPECT_EQ(epoch_problem(limits, {1, 32, 0, inf, false, nan}),
            "epoch 1 ended with a mean training loss that is not finite (infinity)")
      << "a test loss not evaluated is not judged";
  EXPECT_EQ(epoch_problem(limits, {0, 16, 9, 2.0, false, 0}).rfind("epoch 0 ended with 9 of the run's 16", 0), 0u);
  TrainingConfig lenient;
  lenient.max_loss = 1e31;
  lenient.max_skipped_fraction = 1;
  EXPECT_EQ(epoch_problem(lenient, {0, 16, 16, 5e30, true, 5e30}), "");
  const DivergenceGuard guard(OnNonFinite::Stop, true, torch::kCPU, "a lower --lr");
  EXPECT_EQ(stop_code([&] { guard.require_sound_epoch(limits, {0, 16, 0, 2.3, true, 2.2}); }), 0);
  EXPECT_EQ(stop_code([&] { guard.require_sound_epoch(limits, {0, 16, 0, 2.3, true, 200}); }), kExitDiverged);
}

// The advice names the options that set the step's size: Muon's own for a
// Muon run, whose filters are what its rates overflow.
TEST(Divergence, TheAdviceNamesTheOptimisersOwnRates) {
  OptimConfig sgd;
  sgd.optimizer = "sgd";
  EXPECT_NE(lower_rate_advice(sgd).find("a lower --lr or a warm-up"), std::string::npos);
  EXPECT_EQ(lower_rate_advice(sgd).find("--muon"), std::string::npos);
  OptimConfig muon;
  muon.optimizer = "muon";
  const std::string advice = lower_rate_advice(muon);
  EXPECT_NE(advice.find("a lower --muon-lr or --muon-weight-decay (Muon's filters) or --lr"), std::string::npos)
      << advice;
}

}  // namespace
}  // namespace cifar
