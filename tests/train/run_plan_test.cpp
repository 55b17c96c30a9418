// The run plan's arithmetic with known answers: batches and steps per epoch
// for uneven shards, drop_last, accumulation, --max-steps, and the batches
// left for the ETA.
#include <gtest/gtest.h>

#include "train/run_plan.hpp"

namespace cifar {
namespace {

TrainingConfig training(int epochs, int batch_size, int accumulate = 1, long max_steps = 0) {
  TrainingConfig t;
  t.epochs = epochs;
  t.batch_size = batch_size;
  t.accumulate = accumulate;
  t.max_steps = max_steps;
  return t;
}

TEST(RunPlan, TheRecipeOnTwoRanks) {
  // 50,000 images on 2 ranks: 25,000 each, 98 batches of 256 (the last has 168).
  const RunPlan p = make_run_plan(50000, 2, training(10, 256), false, 0.0);
  EXPECT_EQ(p.samples_per_rank, 25000);
  EXPECT_EQ(p.batches_per_epoch, 98);
  EXPECT_EQ(p.steps_per_epoch, 98);
  EXPECT_EQ(p.total_steps, 980);
  EXPECT_TRUE(p.ends_step(0));
  EXPECT_FALSE(p.finished(979));
  EXPECT_TRUE(p.finished(980));
}

TEST(RunPlan, UnevenShardsArePaddedOrDropped) {
  // 10 samples on 3 ranks: 4 each padded (DistributedSampler), 3 with drop_last.
  EXPECT_EQ(make_run_plan(10, 3, training(1, 3), false, 0).batches_per_epoch, 2);  // 3 + 1
  EXPECT_EQ(make_run_plan(10, 3, training(1, 3), true, 0).batches_per_epoch, 1);   // 3, no tail
  EXPECT_EQ(make_run_plan(10, 3, training(1, 2), true, 0).batches_per_epoch, 1);   // 3 -> one batch of 2
}

TEST(RunPlan, AccumulationGroupsBatchesIntoSteps) {
  // 7 batches, 3 per step: steps of batches {0,1,2} {3,4,5} {6}.
  const RunPlan p = make_run_plan(7 * 4, 1, training(2, 4, 3), false, 0.5);
  EXPECT_EQ(p.batches_per_epoch, 7);
  EXPECT_EQ(p.steps_per_epoch, 3);
  EXPECT_EQ(p.total_steps, 6);
  EXPECT_EQ(p.warmup_steps, 1);  // half an epoch of 3 steps, rounded down
  const std::vector<bool> starts{true, false, false, true, false, false, true};
  const std::vector<bool> ends{false, false, true, false, false, true, true};
  for (long b = 0; b < 7; ++b) {
    EXPECT_EQ(p.starts_step(b), starts[static_cast<size_t>(b)]) << b;
    EXPECT_EQ(p.ends_step(b), ends[static_cast<size_t>(b)]) << b;
  }
}

TEST(RunPlan, MaxStepsShortensTheRun) {
  const RunPlan p = make_run_plan(1000, 2, training(10, 10, 1, 120), false, 0);
  EXPECT_EQ(p.steps_per_epoch, 50);
  EXPECT_EQ(p.total_steps, 120);
  EXPECT_EQ(make_run_plan(1000, 2, training(2, 10, 1, 5000), false, 0).total_steps, 100);  // epochs end first
}

TEST(RunPlan, RemainingBatchesForTheEta) {
  const RunPlan p = make_run_plan(1000, 2, training(3, 10), false, 0);  // 50 batches per epoch
  EXPECT_EQ(p.remaining_batches(0, 0, 1), 49 + 100);
  EXPECT_EQ(p.remaining_batches(2, 49, 150), 0);
  const RunPlan limited = make_run_plan(1000, 2, training(3, 10, 1, 60), false, 0);
  EXPECT_EQ(limited.remaining_batches(0, 9, 10), 50);  // the step limit comes first
  const RunPlan accumulating = make_run_plan(1000, 2, training(3, 10, 2, 0), false, 0);  // 25 steps per epoch
  EXPECT_EQ(accumulating.remaining_batches(0, 1, 1), 48 + 100);
}

}  // namespace
}  // namespace cifar
