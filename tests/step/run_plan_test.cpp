// The run plan's arithmetic with known answers: batches and steps per epoch
// for uneven shards, drop_last, accumulation, --max-steps, the batches left
// for the ETA, and the step shape of a resume at another world size.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "step/run_plan.hpp"
#include "util/error.hpp"

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
  EXPECT_EQ(limited.remaining_batches(0, 9, 10), 50);                                    // the step limit comes first
  const RunPlan accumulating = make_run_plan(1000, 2, training(3, 10, 2, 0), false, 0);  // 25 steps per epoch
  EXPECT_EQ(accumulating.remaining_batches(0, 1, 1), 48 + 100);
}

// --elastic-batch global: the shape that keeps the global batch per
// optimiser step on another world size, with known answers.
TEST(ElasticStepShape, KeepsTheGlobalBatchPerStep) {
  // 4 ranks x 16 = 64: on 8 and on 32 ranks the micro-batch divides.
  EXPECT_EQ(elastic_step_shape({16, 4, 1}, 8), (StepShape{8, 8, 1}));
  EXPECT_EQ(elastic_step_shape({16, 4, 1}, 32), (StepShape{2, 32, 1}));
  EXPECT_EQ(elastic_step_shape({16, 4, 1}, 1), (StepShape{64, 1, 1}));
  EXPECT_EQ(elastic_step_shape({6, 4, 2}, 3), (StepShape{8, 3, 2})) << "the accumulation stays when it can";
  // The writing run accumulated and the new world size divides the step's
  // batch but not the micro-batch: the fewest micro-batches per step whose
  // per-rank batch is no larger than the writing run's.
  EXPECT_EQ(elastic_step_shape({6, 4, 2}, 16), (StepShape{3, 16, 1})) << "48 = 16 x 3: fewer micro-batches";
  EXPECT_EQ(elastic_step_shape({2, 4, 3}, 3), (StepShape{2, 3, 4})) << "24 = 3 x 2 x 4: more micro-batches";
  EXPECT_EQ(elastic_step_shape({3, 2, 2}, 4), (StepShape{3, 4, 1})) << "12 = 4 x 3";
  EXPECT_EQ(elastic_step_shape({2, 3, 4}, 4), (StepShape{2, 4, 3})) << "4 x 6 x 1 and 4 x 3 x 2 exceed 2 per rank";
  EXPECT_EQ(elastic_step_shape({1, 6, 4}, 8), (StepShape{1, 8, 3}));
  for (const StepShape& written : {StepShape{16, 4, 1}, StepShape{6, 4, 2}, StepShape{2, 3, 4}})
    for (int world = 1; world <= 64; ++world) {
      if (written.global_batch() % world != 0) continue;
      const StepShape s = elastic_step_shape(written, world);
      EXPECT_EQ(s.global_batch(), written.global_batch()) << to_string(written) << " on " << world;
      EXPECT_EQ(s.world_size, world);
    }
}

TEST(ElasticStepShape, AGlobalBatchThatDoesNotDivideIsRefusedNamingTheNumbers) {
  // 4 x 16 = 64 on 3 ranks: 64 = 3 x b x a has no solution, accumulation or not.
  const std::vector<std::tuple<StepShape, int, std::string>> cases = {
      {{16, 4, 1},
       3,
       "resume on 3 rank(s): the checkpoint's global batch of 64 samples per optimiser step (16 per rank x 4 ranks) "
       "does not divide among 3 ranks, with or without gradient accumulation; resume on 1, 2, 4, 8, 16, 32, 64 "
       "ranks, or pass --elastic-batch per-rank"},
      {{16, 4, 1},
       128,
       "global batch of 64 samples per optimiser step (16 per rank x 4 ranks) does not divide among 128"},
      {{6, 4, 2}, 32, "global batch of 48 samples per optimiser step (6 per rank x 4 ranks x 2 micro-batches)"},
  };
  for (const auto& [written, world, expected] : cases) {
    try {
      elastic_step_shape(written, world);
      ADD_FAILURE() << to_string(written) << " on " << world << " ranks was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace cifar
