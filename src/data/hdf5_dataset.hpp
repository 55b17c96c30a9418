// The packed CIFAR-10 HDF5 file (schema in cifar_schema.hpp, docs/data.md):
// the writer used by cifar_pack and the validating reader used by training.
//
// Reader contract: every failure -- missing file, not HDF5, truncated file,
// wrong schema version/shape/dtype, a missing dataset, a corrupted chunk
// (Fletcher32 mismatch), labels outside 0..9 -- is ONE DataError whose message
// names the file and the dataset and says what to do. HDF5's own stderr
// printing is off; its error stack text is part of the message.
//
// Typical use (every rank reads its whole split; CIFAR is small):
//   DatasetInfo info = read_dataset_info(path);        // metadata only
//   Split train = read_split(path, "train");           // images uint8 [N,3,32,32], labels int64 [N]
// A rank that only needs a shard can read a contiguous range with hyperslabs:
//   Split part = read_split(path, "train", /*begin=*/1000, /*count=*/500);
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/cifar_data.hpp"

namespace cifar {

struct H5WriteOptions {
  int gzip_level = 0;  // 0: no compression; 1..9: deflate before the Fletcher32 checksum
};

// Writes `data` as one HDF5 file at `path`, atomically (temporary name in the
// same folder, fsync, rename). Computes and stores per-split counts, class
// counts and per-channel mean/std. Throws DataError/LibraryError.
void write_cifar_h5(const std::string& path, const CifarData& data, const H5WriteOptions& options = {});

struct SplitInfo {
  int64_t count = 0;
  std::array<int64_t, schema::kNumClasses> class_counts{};
  std::array<double, 3> mean{};  // of pixel/255 over the split
  std::array<double, 3> std{};
};

struct DatasetInfo {
  std::string path;
  int schema_version = 0;
  std::vector<std::string> class_names;
  SourceInfo source;
  std::map<std::string, SplitInfo> splits;  // "train", "test"
  const SplitInfo& split(const std::string& name) const;  // DataError if absent
};

// Opens and validates the whole schema (attributes, dataset shapes and dtypes)
// without reading pixel data.
DatasetInfo read_dataset_info(const std::string& path);

struct Split {
  std::string name;             // "train" or "test"
  int64_t begin = 0;            // first sample of the split held here
  torch::Tensor images;         // uint8 [n,3,32,32], contiguous, CPU
  torch::Tensor labels;         // int64 [n], values 0..9
  SplitInfo info;               // statistics of the whole split (not of this range)
  std::vector<std::string> class_names;
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

// Reads samples [begin, begin + count) of `split` (count < 0: to the end),
// verifying every chunk's checksum and every label. When the whole split is
// read, its class counts must also match the stored ones.
Split read_split(const std::string& path, const std::string& split, int64_t begin = 0, int64_t count = -1);

}  // namespace cifar
