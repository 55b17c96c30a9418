// Learning-rate schedules at known steps.
#include <gtest/gtest.h>

#include "optim/schedule.hpp"

namespace cifar {
namespace {

TEST(Schedule, ConstantWithLinearWarmup) {
  const ScheduleOptions o{ScheduleKind::Constant, 0.1, 100, 4};
  EXPECT_DOUBLE_EQ(learning_rate(o, 0), 0.025);
  EXPECT_DOUBLE_EQ(learning_rate(o, 3), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(o, 99), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate({ScheduleKind::Constant, 1e-3, 10, 0}, 0), 1e-3);  // the recipe: flat
}

TEST(Schedule, CosineDecaysToZeroAtTheLastStep) {
  const ScheduleOptions o{ScheduleKind::Cosine, 0.2, 110, 10};
  EXPECT_DOUBLE_EQ(learning_rate(o, 10), 0.2);
  EXPECT_NEAR(learning_rate(o, 60), 0.1, 1e-12);  // halfway
  EXPECT_NEAR(learning_rate(o, 110), 0.0, 1e-12);
}

TEST(Schedule, OneCycleRisesFromATwentyFifthThenFalls) {
  const ScheduleOptions o{ScheduleKind::OneCycle, 0.1, 100, 0};  // 30 steps up
  EXPECT_DOUBLE_EQ(learning_rate(o, 0), 0.1 / 25);
  EXPECT_DOUBLE_EQ(learning_rate(o, 30), 0.1);
  EXPECT_GT(learning_rate(o, 29), learning_rate(o, 10));
  EXPECT_NEAR(learning_rate(o, 100), 0.1 / 1e4, 1e-15);
}

TEST(Schedule, TriangleRisesToThePeakAt23PercentThenFallsTo7Percent) {
  const ScheduleOptions o{ScheduleKind::Triangle, 2.0, 100, 0};  // peak at step 23
  EXPECT_DOUBLE_EQ(learning_rate(o, 0), 0.4);
  EXPECT_DOUBLE_EQ(learning_rate(o, 23), 2.0);
  EXPECT_NEAR(learning_rate(o, 100), 0.14, 1e-12);
  EXPECT_NEAR(learning_rate(o, 61), 2.0 * (1.0 - 0.93 * 38.0 / 77.0), 1e-12);
  const ScheduleOptions early{ScheduleKind::Triangle, 1.0, 100, 10};  // --warmup-epochs places the peak
  EXPECT_DOUBLE_EQ(learning_rate(early, 10), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(early, 5), 0.6);
}

// The record recipe's (E1) tail: linear over 272 of 284 steps, never below
// 0.05 x peak, held there for the rest: max(1 - step/272, 0.05).
TEST(Schedule, LowRateTailHoldsTheFloorAfterTheShape) {
  const ScheduleOptions o{ScheduleKind::Linear, 2.0, 284, 0, 12, 0.05};
  EXPECT_EQ(o.shape_steps(), 272);
  EXPECT_DOUBLE_EQ(learning_rate(o, 0), 2.0);
  EXPECT_DOUBLE_EQ(learning_rate(o, 136), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(o, 258), 2.0 * (1 - 258.0 / 272));  // 0.0515 x peak: above the floor
  EXPECT_DOUBLE_EQ(learning_rate(o, 259), 0.1);                      // 0.0478 x peak: the floor
  EXPECT_DOUBLE_EQ(learning_rate(o, 283), 0.1);
  // Without a tail or a floor the shape is the whole run's, as before.
  EXPECT_DOUBLE_EQ(learning_rate({ScheduleKind::Linear, 2.0, 284, 0}, 142), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate({ScheduleKind::Linear, 2.0, 284, 0}, 284), 0.0);
}

}  // namespace
}  // namespace cifar
