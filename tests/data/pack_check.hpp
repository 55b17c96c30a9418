// Packing checks shared by the synthetic-archive test and the real-data test:
// pack an input, then compare the HDF5 contents with class counts and
// per-channel pixel sums computed straight from the .bin files, which the
// system `tar` extracts (a reader independent of ours).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "test_files.hpp"

namespace cifar::test {

struct BinTotals {
  std::array<int64_t, 10> classes{};
  std::array<uint64_t, 3> channel_sums{};
  int64_t records = 0;
};

// Class counts and per-channel pixel sums of some .bin files, read byte by byte.
BinTotals totals_of_bins(const std::string& folder, const std::vector<std::string>& names);

// `tar -xzf archive -C into` (gtest failure if tar fails).
void extract_with_tar(const std::string& archive, const std::string& into);

// Packs `input` to dir/packed.h5 and checks both splits against the .bin files in `bins`;
// prints the per-split figures.
void expect_pack_matches_bins(const std::string& input, const std::string& bins, const TempDir& dir,
                              const std::string& expected_kind);

}  // namespace cifar::test
