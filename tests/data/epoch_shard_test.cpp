// EpochShard and loader_options: what one epoch loads, with answers worked
// out by hand on unshuffled splits (sample i at position i of the order),
// and the shuffled cases against the sampler they must reproduce.
#include <gtest/gtest.h>

#include "data/dataset.hpp"
#include "data/epoch_shard.hpp"

namespace cifar {
namespace {

using Indices = std::vector<int64_t>;

DataConfig unshuffled(bool drop_last = false) {
  DataConfig d;
  d.shuffle = false;
  d.drop_last = drop_last;
  return d;
}

TEST(EpochShard, OwnEpochIsTheSamplersShardResumedAtItsBatch) {
  // 11 samples on 2 ranks: padded to 12 by wrapping (sample 0 twice), rank r takes positions r, r+2, ...
  const EpochShard rank0(unshuffled(), 11, 2, 0, 2, TrainingPosition{0, 0});
  const EpochShard rank1(unshuffled(), 11, 2, 1, 2, TrainingPosition{0, 2});
  EXPECT_FALSE(rank1.elastic());
  EXPECT_EQ(rank0.indices(), (Indices{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(rank1.indices(), (Indices{1, 3, 5, 7, 9, 0}));  // the whole shard: the loader skips what was trained
  EXPECT_EQ(rank1.batches(), 3);                            // 6 per rank in batches of 2
  EXPECT_EQ(rank1.global_position(), 8);                    // 2 batches x 2 per rank x 2 ranks
  const LoaderOptions o = rank1.epoch_options(LoaderOptions{});
  EXPECT_EQ(o.rank, 1);
  EXPECT_EQ(o.epoch, 0);
  EXPECT_EQ(o.start_batch, 2);
  EXPECT_EQ(o.stream, 0u);  // the ordinary (seed, rank, epoch) stream
  // --drop-last: 5 per rank, batches of 2 -> 2 (the loader drops the fifth).
  EXPECT_EQ(EpochShard(unshuffled(true), 11, 2, 1, 2, TrainingPosition{}).indices(), (Indices{1, 3, 5, 7, 9}));
  EXPECT_EQ(EpochShard(unshuffled(true), 11, 2, 1, 2, TrainingPosition{}).batches(), 2);
  LoaderOptions dropping;
  dropping.drop_last = true;
  EXPECT_TRUE(EpochShard(unshuffled(true), 11, 2, 1, 2, TrainingPosition{}).epoch_options(dropping).drop_last)
      << "an epoch of its own keeps the run's drop_last";
}

TEST(EpochShard, ElasticEpochIsTheRestOfTheBeginningRunsOrder) {
  // Begun on 4 ranks x 2 per rank (global micro-batch 8) over 16 samples, one
  // micro-batch done: position 8. Resumed on 2 ranks x 4: 1 of its
  // micro-batches (8 samples) done, the block [8, 16) split by striding.
  const TrainingPosition place{0, 1, 0, 4, 2, 0};
  const EpochShard rank0(unshuffled(), 16, 2, 0, 4, place);
  const EpochShard rank1(unshuffled(), 16, 2, 1, 4, place);
  EXPECT_TRUE(rank0.elastic());
  EXPECT_EQ(rank0.global_position(), 8);
  EXPECT_EQ(rank0.indices(), (Indices{8, 10, 12, 14}));
  EXPECT_EQ(rank1.indices(), (Indices{9, 11, 13, 15}));
  EXPECT_EQ(rank0.batches(), 2);  // counted from the origin: 16 positions in micro-batches of 8
  LoaderOptions run;
  run.drop_last = true;
  const LoaderOptions o = rank1.epoch_options(run);
  EXPECT_EQ(o.start_batch, 0);  // the indices hold only the rest
  EXPECT_EQ(o.stream, 9u);      // global position + 1
  EXPECT_FALSE(o.drop_last);    // the beginning run's end, a short last micro-batch included
  EXPECT_EQ(o.rank, 1);
}

TEST(EpochShard, ElasticEpochFromAnOriginBetweenMicroBatches) {
  // Begun on 3 ranks x 2 (micro-batch 6) over 12 samples, one micro-batch
  // done; continued on 2 ranks x 2 (--elastic-batch per-rank): position 6 is
  // no whole number of the new micro-batches of 4, so it is the origin.
  const TrainingPosition place{3, 0, 0, 3, 2, 6};
  const EpochShard rank0(unshuffled(), 12, 2, 0, 2, place);
  const EpochShard rank1(unshuffled(), 12, 2, 1, 2, place);
  EXPECT_EQ(rank0.global_position(), 6);
  EXPECT_EQ(rank0.indices(), (Indices{6, 8, 10}));  // blocks [6, 10) and [10, 12)
  EXPECT_EQ(rank1.indices(), (Indices{7, 9, 11}));
  EXPECT_EQ(rank0.batches(), 2);  // from 6 to 12 in micro-batches of 4, the last one short
  EXPECT_EQ(rank0.epoch_options(LoaderOptions{}).epoch, 3);
  // One batch later: position 10, the short block only.
  const EpochShard later(unshuffled(), 12, 2, 1, 2, TrainingPosition{3, 1, 0, 3, 2, 6});
  EXPECT_EQ(later.global_position(), 10);
  EXPECT_EQ(later.indices(), (Indices{11}));
  EXPECT_EQ(later.epoch_options(LoaderOptions{}).stream, 11u);
}

TEST(EpochShard, ShuffledShardsAreTheSamplers) {
  DataConfig d;
  d.shuffle_seed = 3;
  const int world = 2, batch = 5;
  for (int rank = 0; rank < world; ++rank) {
    const Indices sampler = distributed_sampler_indices({50, world, rank, 3, 2, true, false});
    EXPECT_EQ(EpochShard(d, 50, world, rank, batch, TrainingPosition{2, 4}).indices(), sampler);
    // An "elastic" epoch begun by this very world size and batch, from its
    // start, re-shards into the same shard.
    EXPECT_EQ(EpochShard(d, 50, world, rank, batch, TrainingPosition{2, 0, 0, world, batch, 0}).indices(), sampler);
  }
}

TEST(LoaderOptions, FromDataConfig) {
  DataConfig d;
  d.augment = true;
  d.crop_pad = 2;
  d.crop_padding = CropPadding::Reflect;
  d.flip = FlipMode::Alternating;
  d.drop_last = true;
  d.prefetch_batches = 5;
  const Normalization n = Normalization::recipe();
  const LoaderOptions o = loader_options(d, torch::kCPU, n, 42, torch::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(o.augment);
  EXPECT_EQ(o.pad, 2);
  EXPECT_EQ(o.padding, CropPadding::Reflect);
  EXPECT_EQ(o.flip, FlipMode::Alternating);
  EXPECT_TRUE(o.drop_last);
  EXPECT_EQ(o.prefetch_depth, 5u);
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.memory_format, torch::MemoryFormat::ChannelsLast);
  EXPECT_FALSE(o.resident);
}

TEST(DataResidency, OnTheGpuOnlyWithDataOnDevice) {
  DataConfig d;
  const torch::Device gpu(torch::kCUDA, 0);  // a name only: no GPU is touched
  EXPECT_TRUE(data_on_device(d, gpu));
  EXPECT_TRUE(loader_options(d, gpu, Normalization::recipe(), 0, torch::MemoryFormat::Contiguous).resident);
  EXPECT_FALSE(data_on_device(d, torch::kCPU));
  d.on_device = false;
  EXPECT_FALSE(data_on_device(d, gpu));
  EXPECT_FALSE(loader_options(d, gpu, Normalization::recipe(), 0, torch::MemoryFormat::Contiguous).resident);
  // On the CPU the images stay where they are.
  Dataset data;
  data.train.images = torch::zeros({2, 3, 32, 32}, torch::kUInt8);
  place_dataset(data, DataConfig{}, torch::kCPU);
  EXPECT_TRUE(data.train.images.device().is_cpu());
}

TEST(BatchLoader, RefusesASplitThatIsNotWhereTheOptionsSay) {
  Split s;
  s.name = "train";
  s.images = torch::zeros({4, 3, 32, 32}, torch::kUInt8);
  s.labels = torch::zeros({4}, torch::kLong);
  LoaderOptions o;
  o.resident = true;
  EXPECT_THROW(BatchLoader(s, {0, 1}, 2, o, torch::Device(torch::kCUDA, 0)), Error);
}

}  // namespace
}  // namespace cifar
