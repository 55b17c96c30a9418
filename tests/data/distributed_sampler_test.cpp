// DistributedSampler parity with PyTorch: every case of the golden file that
// tools/make_sampler_golden.py wrote with Python's DistributedSampler must be
// reproduced index for index; plus the partition properties that make sharding correct.
#include <gtest/gtest.h>

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
    is >> c.options.num_samples >> c.options.world_size >> c.options.rank >> c.options.seed >>
        c.options.epoch >> shuffle >> drop_last >> colon;
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

}  // namespace
}  // namespace cifar
