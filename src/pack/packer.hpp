// pack_cifar10: the whole of cifar_pack's work as one call (used by the tool
// and by the tests): CIFAR-10 binary release or synthetic data in, one
// validated HDF5 file out, and a summary of what was written.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "data/cifar_data.hpp"
#include "data/hdf5_dataset.hpp"
#include "pack/hdf5_writer.hpp"

namespace cifar {

struct PackSummary {
  SourceInfo source;
  int64_t train_count = 0, test_count = 0;
  std::array<int64_t, schema::kNumClasses> train_classes{}, test_classes{};
  ChannelStats train_stats, test_stats;
};

// Reads the archive or folder `input` (read_cifar10_binary) and writes `output`.
PackSummary pack_cifar10(const std::string& input, const std::string& output, const H5WriteOptions& options = {});

// Writes already-built data (e.g. make_synthetic_cifar) to `output`.
PackSummary pack_cifar_data(const CifarData& data, const std::string& output, const H5WriteOptions& options = {});

}  // namespace cifar
