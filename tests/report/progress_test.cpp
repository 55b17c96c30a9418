// Progress lines and the step profile: formatting with known values, the
// gradient wait recorded per step, and its split into waiting for slower ranks.
#include <gtest/gtest.h>

#include <thread>

#include "report/profile.hpp"
#include "report/progress.hpp"

namespace cifar {
namespace {

TEST(Progress, LineIsTheRecipesWithRateAndEta) {
  EXPECT_EQ(progress_line(0, 100, 196, 1.44789, 5120.4, 192),
            "Epoch: 0 | Batch: 100/196 | Loss: 1.4479 | 5120 img/s | ETA 3m12s");
  EXPECT_EQ(format_duration(45.4), "45s");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(StepProfile, CommWaitIsRecordedPerStep) {
  StepProfile p(true, torch::kCPU);
  p.start_epoch();
  p.end(StepProfile::kBackward);
  const double start = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  p.end_comm_wait();
  ASSERT_EQ(p.wait_starts().size(), 1u);
  ASSERT_EQ(p.waits().size(), 1u);
  EXPECT_NEAR(p.wait_starts()[0], start, 0.01);  // the wait began where backward's charge ended
  EXPECT_GE(p.waits()[0], 0.02);
  EXPECT_DOUBLE_EQ(p.seconds()[StepProfile::kCommWait], p.waits()[0]);
  EXPECT_EQ(p.seconds()[StepProfile::kStragglerWait], 0.0);  // only assigned after the ranks compare times
  p.start_epoch();
  EXPECT_TRUE(p.wait_starts().empty());
  EXPECT_EQ(p.seconds()[StepProfile::kCommWait], 0.0);
}

TEST(StepProfile, DisabledRecordsNothing) {
  StepProfile p(false, torch::kCPU);
  p.start_epoch();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  p.end(StepProfile::kForward);
  p.end_comm_wait();
  EXPECT_EQ(p.seconds()[StepProfile::kForward], 0.0);
  EXPECT_TRUE(p.waits().empty());
}

TEST(StepProfile, StragglerShareIsTheWaitBeforeTheLastRankArrived) {
  // Step 1: the last rank arrived 0.4 s after us, then the collective took
  // 0.1 s. Step 2: we were the last (nothing to split). Step 3: the last rank
  // arrived after our recorded wait ended (clock jitter): the whole wait counts.
  const std::vector<double> starts{10.0, 20.0, 30.0}, waits{0.5, 0.1, 0.3}, latest{10.4, 20.0, 31.0};
  EXPECT_NEAR(straggler_seconds(starts, waits, latest), 0.4 + 0.0 + 0.3, 1e-12);
  // Latest start earlier than ours cannot happen across ranks, but never counts negative.
  EXPECT_EQ(straggler_seconds({5.0}, {0.2}, {4.0}), 0.0);
  EXPECT_EQ(straggler_seconds({}, {}, {}), 0.0);
}

}  // namespace
}  // namespace cifar
