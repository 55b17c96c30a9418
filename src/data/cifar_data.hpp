// In-memory CIFAR-10 as the packer handles it: raw uint8 images in the
// official plane order ([N][3][32][32], R then G then B planes) and labels,
// plus where the data came from. Produced by the binary-layout reader and the
// synthetic generator, consumed by the HDF5 writer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "data/cifar_schema.hpp"

namespace cifar {

struct RawSplit {
  std::vector<uint8_t> images;  // count() * 3072 bytes
  std::vector<uint8_t> labels;  // count() bytes, 0..9
  int64_t count() const { return static_cast<int64_t>(labels.size()); }
};

// Where the data came from; recorded in the HDF5 file's root attributes.
struct SourceInfo {
  std::string kind;    // "official-archive", "archive", "folder" or "synthetic"
  std::string md5;     // 32 hex digits
  std::string md5_of;  // what md5 covers, e.g. "archive file" or "the six .bin files in order"
  std::string note;    // human-readable provenance, e.g. the non-official-md5 note
};

struct CifarData {
  RawSplit train;
  RawSplit test;
  std::vector<std::string> class_names;
  SourceInfo source;
};

// Per-channel statistics of pixel/255 over one split, computed exactly from
// integer sums (mean and population std, as torchvision's Normalize expects).
struct ChannelStats {
  std::array<double, 3> mean{};
  std::array<double, 3> std{};
  std::array<uint64_t, 3> pixel_sum{};  // sum of raw uint8 values per channel
};
ChannelStats compute_channel_stats(const RawSplit& split);
std::array<int64_t, schema::kNumClasses> count_classes(const RawSplit& split);

}  // namespace cifar
