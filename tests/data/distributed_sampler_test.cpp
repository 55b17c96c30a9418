// DistributedSampler parity with PyTorch: every case of the golden file that
// dev/make_sampler_golden.py wrote with Python's DistributedSampler must be
// reproduced index for index; plus the partition properties that make sharding correct.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "data/distributed_sampler.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

struct GoldenCase {
  SamplerOptions options;
  std::vector<int64_t> expected;
  std::string line;
};

std::vector<GoldenCase> load_golden() {
  const std::string path = std::string(CIFAR_TEST_DATA_DIR) + "/golden/distributed_sampler.txt";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<GoldenCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    GoldenCase c;
    int shuffle = 0, drop_last = 0;
    std::string colon;
    is >> c.options.num_samples >> c.options.world_size >> c.options.rank >> c.options.seed >> c.options.epoch >>
        shuffle >> drop_last >> colon;
    if (!is || colon != ":") throw std::runtime_error("bad golden line: " + line);
    c.options.shuffle = shuffle != 0;
    c.options.drop_last = drop_last != 0;
    for (int64_t v; is >> v;) c.expected.push_back(v);
    c.line = line.substr(0, line.find(':'));
    cases.push_back(std::move(c));
  }
  return cases;
}

TEST(DistributedSampler, MatchesPyTorchGoldenFile) {
  const std::vector<GoldenCase> cases = load_golden();
  ASSERT_GE(cases.size(), 80u);
  for (const GoldenCase& c : cases) {
    EXPECT_EQ(distributed_sampler_indices(c.options), c.expected) << "case " << c.line;
  }
}

TEST(DistributedSampler, RanksPartitionTheSplitWithWrapPadding) {
  // N = 103, W = 4: 26 per rank, 104 slots, exactly one sample appears twice.
  std::multiset<int64_t> seen;
  for (int r = 0; r < 4; ++r) {
    SamplerOptions o{103, 4, r, 9, 2, true, false};
    const auto idx = distributed_sampler_indices(o);
    EXPECT_EQ(idx.size(), 26u);
    seen.insert(idx.begin(), idx.end());
  }
  EXPECT_EQ(seen.size(), 104u);
  for (int64_t i = 0; i < 103; ++i) EXPECT_GE(seen.count(i), 1u) << i;
}

TEST(DistributedSampler, DropLastCutsTheTailAndNeverRepeats) {
  std::set<int64_t> seen;
  for (int r = 0; r < 4; ++r) {
    const auto idx = distributed_sampler_indices({103, 4, r, 9, 2, true, true});
    EXPECT_EQ(idx.size(), 25u);
    seen.insert(idx.begin(), idx.end());
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(DistributedSampler, EpochChangesThePermutationSeedKeepsItReproducible) {
  const auto a = distributed_sampler_indices({1000, 2, 0, 5, 0, true, false});
  EXPECT_EQ(a, distributed_sampler_indices({1000, 2, 0, 5, 0, true, false}));
  EXPECT_NE(a, distributed_sampler_indices({1000, 2, 0, 5, 1, true, false}));
  EXPECT_EQ(samples_per_rank(1000, 3, false), 334);
  EXPECT_EQ(samples_per_rank(1000, 3, true), 333);
}

TEST(DistributedSampler, RejectsBadWorldRankOrEmptySplit) {
  EXPECT_THROW(distributed_sampler_indices({10, 0, 0, 0, 0, true, false}), ConfigError);
  EXPECT_THROW(distributed_sampler_indices({10, 2, 2, 0, 0, true, false}), ConfigError);
  EXPECT_THROW(distributed_sampler_indices({0, 1, 0, 0, 0, true, false}), ConfigError);
  EXPECT_THROW(distributed_sampler_indices({3, 4, 0, 0, 0, true, true}), ConfigError);
}

// ---- Resuming at another world size ----------------------------------------

// What the old run's ranks train in their micro-batch `batch` (0-based in the
// epoch), from the PyTorch-exact sampler itself: the oracle for re-sharding.
std::multiset<int64_t> old_micro_batch(SamplerOptions o, int batch_size, int64_t batch) {
  std::multiset<int64_t> samples;
  for (o.rank = 0; o.rank < o.world_size; ++o.rank) {
    const auto mine = distributed_sampler_indices(o);
    const auto begin = std::min<int64_t>(batch * batch_size, static_cast<int64_t>(mine.size()));
    const auto end = std::min<int64_t>(begin + batch_size, static_cast<int64_t>(mine.size()));
    samples.insert(mine.begin() + begin, mine.begin() + end);
  }
  return samples;
}

// 106 samples on 4 ranks: 27 per rank (two padded repeats), micro-batches of
// 6 per rank: four full global micro-batches of 24 and a last one of 12.
// Checkpointed after 2 micro-batches (global position 48) and resumed on 2
// and on 3 ranks with the same global micro-batch (24 / W' per rank): every
// remaining micro-batch trains exactly the samples the 4-rank run's did, so
// every remaining sample of the epoch once.
TEST(ElasticResume, ReshardedMicroBatchesAreTheOldRunsFor4To2And4To3) {
  for (const bool shuffle : {false, true}) {
    SamplerOptions old;
    old.num_samples = 106;
    old.world_size = 4;
    old.seed = 5;
    old.epoch = 3;
    old.shuffle = shuffle;
    const int batch = 6;
    ASSERT_EQ(samples_per_rank(106, 4, false), 27);
    ASSERT_EQ(epoch_end(106, 4, batch, false), 108);
    const int64_t position = 2 * batch * 4;
    for (const int new_world : {2, 3}) {
      const int new_batch = 24 / new_world;
      std::vector<std::vector<int64_t>> ranks;
      for (int r = 0; r < new_world; ++r) ranks.push_back(resharded_indices(old, batch, position, 24, new_world, r));
      for (const auto& mine : ranks) EXPECT_EQ(mine.size(), ranks[0].size()) << "equal shares";
      // Micro-batch b of the resumed run (per-rank batch new_batch, the last one shorter) == the old run's b + 2.
      const int64_t per_new_rank = static_cast<int64_t>(ranks[0].size());
      EXPECT_EQ(per_new_rank, (27 - 12) * 4 / new_world);
      int64_t b = 0;
      for (int64_t begin = 0; begin < per_new_rank; begin += new_batch, ++b) {
        std::multiset<int64_t> resumed;
        for (const auto& mine : ranks)
          resumed.insert(mine.begin() + begin, mine.begin() + std::min<int64_t>(begin + new_batch, per_new_rank));
        EXPECT_EQ(resumed, old_micro_batch(old, batch, b + 2))
            << "shuffle " << shuffle << ", 4 -> " << new_world << " ranks, micro-batch " << b;
      }
      EXPECT_EQ(b, 3) << "micro-batches 2, 3 and the short 4 remain";
    }
  }
}

// The rest of an epoch in micro-batches of another size (gradient
// accumulation chosen on resume, or --elastic-batch per-rank): 120 samples
// on 4 ranks x 2 per rank, 3 micro-batches per step (24 per step),
// checkpointed after 2 steps (position 48). On 3 ranks x 2 (blocks of 6):
// every remaining sample exactly once, and with 4 micro-batches per step
// each step the 4-rank run's step; from position 50 (no boundary of the old
// run: blocks need not be its) likewise once.
TEST(ElasticResume, MicroBatchesOfAnotherSizeTrainEachRemainingSampleOnce) {
  SamplerOptions old;
  old.num_samples = 120;
  old.world_size = 4;
  old.seed = 7;
  const std::vector<int64_t> order = global_sample_order(old);
  ASSERT_EQ(epoch_end(120, 4, 2, false), 120);
  for (const int64_t position : {48, 54}) {
    std::vector<std::vector<int64_t>> ranks;
    for (int r = 0; r < 3; ++r) ranks.push_back(resharded_indices(old, 2, position, 6, 3, r));
    std::multiset<int64_t> together, expected(order.begin() + position, order.end());
    for (const auto& mine : ranks) together.insert(mine.begin(), mine.end());
    EXPECT_EQ(together, expected) << "from position " << position;
    if (position != 48) continue;
    for (int64_t step = 0; step < 3; ++step) {  // 4 micro-batches of 2 per rank: 8 indices of each rank
      std::multiset<int64_t> resumed, old_step;
      for (const auto& mine : ranks) resumed.insert(mine.begin() + step * 8, mine.begin() + step * 8 + 8);
      for (int64_t m = 3 * (step + 2); m < 3 * (step + 3); ++m) {
        const auto micro = old_micro_batch(old, 2, m);
        old_step.insert(micro.begin(), micro.end());
      }
      EXPECT_EQ(resumed, old_step) << "step " << step + 2;
    }
  }
}

// Without shuffling the answer is known outright: positions 48.. of 0..105
// followed by the padding 0, 1, split by striding.
TEST(ElasticResume, KnownAnswerWithoutShuffle) {
  SamplerOptions old;
  old.num_samples = 106;
  old.world_size = 4;
  old.shuffle = false;
  const std::vector<int64_t> rank1 = resharded_indices(old, 6, 48, 24, 3, 1);
  std::vector<int64_t> expected;
  for (int64_t k = 49; k < 108; k += 3) expected.push_back(k % 106);
  EXPECT_EQ(rank1, expected);
  EXPECT_EQ(rank1.back(), 0) << "position 106 is the first padded repeat";
  EXPECT_TRUE(resharded_indices(old, 6, 108, 24, 2, 0).empty()) << "the epoch's end: nothing left";
}

// 106 samples on 4 ranks with drop_last: 26 per rank, 104 positions, four
// full micro-batches of 24 and a short one of 8 that the loader drops (and
// that would not divide among 3 ranks). From position 48, 3 ranks get blocks
// 2 and 3 only: 16 samples each, exactly positions [48, 96) between them. In
// blocks of 12 (another micro-batch) the epoch still ends at 96, where the
// run that began it ended it.
TEST(ElasticResume, WithDropLastTheDroppedShortBlockEndsTheEpoch) {
  SamplerOptions old;
  old.num_samples = 106;
  old.world_size = 4;
  old.seed = 5;
  old.drop_last = true;
  const std::vector<int64_t> order = global_sample_order(old);
  ASSERT_EQ(order.size(), 104u);
  EXPECT_EQ(epoch_end(106, 4, 6, true), 96);
  for (const int64_t block : {24, 12}) {
    std::vector<int64_t> together, expected(order.begin() + 48, order.begin() + 96);
    for (int rank = 0; rank < 3; ++rank) {
      const std::vector<int64_t> mine = resharded_indices(old, 6, 48, block, 3, rank);
      EXPECT_EQ(mine.size(), 16u) << "rank " << rank << ", blocks of " << block;
      together.insert(together.end(), mine.begin(), mine.end());
    }
    std::sort(together.begin(), together.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(together, expected) << "blocks of " << block;
  }
}

// The resume rules refuse a run that reaches such a block (continued_position);
// one that --max-steps ends before it gets the full blocks only.
TEST(ElasticResume, AShortLastBlockThatDoesNotDivideIsLeftOut) {
  SamplerOptions old;
  old.num_samples = 100;  // 25 per rank: the last micro-batch of 1 per rank holds 4, not divisible by 3
  old.world_size = 4;
  const std::vector<int64_t> global = global_sample_order(old);
  for (int r = 0; r < 3; ++r) {
    const std::vector<int64_t> mine = resharded_indices(old, 6, 48, 24, 3, r);
    ASSERT_EQ(mine.size(), 16u) << "two blocks of 24, 8 each";
    for (size_t k = 0; k < mine.size(); ++k)
      EXPECT_EQ(mine[k], global[48 + 24 * (k / 8) + 3 * (k % 8) + static_cast<size_t>(r)]);
  }
  EXPECT_THROW(resharded_indices(old, 6, 101, 24, 2, 0), ConfigError) << "past the epoch's end";
  EXPECT_THROW(resharded_indices(old, 6, 48, 0, 2, 0), ConfigError) << "an empty micro-batch";
}

}  // namespace
}  // namespace cifar
