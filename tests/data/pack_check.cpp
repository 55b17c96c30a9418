// Packing checks against the .bin files (see pack_check.hpp).
#include "pack_check.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "data/cifar_schema.hpp"
#include "pack/packer.hpp"
#include "util/paths.hpp"

namespace cifar::test {

BinTotals totals_of_bins(const std::string& folder, const std::vector<std::string>& names) {
  BinTotals t;
  for (const std::string& name : names) {
    std::ifstream in(paths::join(folder, name), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(bytes.size(), 30730000u) << name;
    for (size_t r = 0; r + 3073 <= bytes.size(); r += 3073, ++t.records) {
      ++t.classes.at(static_cast<uint8_t>(bytes[r]));
      for (size_t k = 0; k < 3072; ++k) t.channel_sums[k / 1024] += static_cast<uint8_t>(bytes[r + 1 + k]);
    }
  }
  return t;
}

void extract_with_tar(const std::string& archive, const std::string& into) {
  ASSERT_EQ(paths::create_directories(into), "");
  const std::string cmd = "tar -xzf '" + archive + "' -C '" + into + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

void expect_pack_matches_bins(const std::string& input, const std::string& bins, const test::TempDir& dir,
                              const std::string& expected_kind) {
  const std::string out = dir.file("packed.h5");
  const PackSummary summary = pack_cifar10(input, out);
  EXPECT_EQ(summary.source.kind, expected_kind);
  const std::vector<std::string> train_files(schema::kTrainBatchFiles.begin(), schema::kTrainBatchFiles.end());
  for (const auto& [split, files] :
       {std::pair<std::string, std::vector<std::string>>{"train", train_files}, {"test", {schema::kTestBatchFile}}}) {
    const BinTotals want = totals_of_bins(bins, files);
    const Split got = read_split(out, split);
    ASSERT_EQ(got.size(), want.records) << split;
    for (int c = 0; c < 10; ++c) {
      EXPECT_EQ(got.labels.eq(c).sum().item<int64_t>(), want.classes[c]) << split << " class " << c;
      EXPECT_EQ(got.info.class_counts[c], want.classes[c]) << split << " class " << c;
    }
    const torch::Tensor sums = got.images.to(torch::kLong).sum({0, 2, 3});
    for (int ch = 0; ch < 3; ++ch) {
      EXPECT_EQ(static_cast<uint64_t>(sums[ch].item<int64_t>()), want.channel_sums[ch]) << split << " channel " << ch;
      const ChannelStats& packed = split == "train" ? summary.train_stats : summary.test_stats;
      EXPECT_EQ(packed.pixel_sum[ch], want.channel_sums[ch]) << split << " channel " << ch;
    }
    std::printf("%s: %lld images, classes", split.c_str(), static_cast<long long>(want.records));
    for (int64_t n : want.classes) std::printf(" %lld", static_cast<long long>(n));
    std::printf(", pixel sums R G B %llu %llu %llu\n", static_cast<unsigned long long>(want.channel_sums[0]),
                static_cast<unsigned long long>(want.channel_sums[1]),
                static_cast<unsigned long long>(want.channel_sums[2]));
  }
}

}  // namespace cifar::test
