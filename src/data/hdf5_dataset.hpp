// The packed CIFAR-10 HDF5 file (schema in cifar_schema.hpp, docs/data.md):
// the validating reader used by training (the writer: pack/hdf5_writer.hpp).
//
// Reader contract: every failure -- missing file, not HDF5, truncated file,
// wrong schema version/shape/dtype, a missing dataset, a corrupted chunk
// (Fletcher32 mismatch), labels outside 0..9 -- is ONE DataError whose message
// names the file and the dataset and says what to do. HDF5's own stderr
// printing is off; its error stack text is part of the message.
//
// Typical use (every rank reads its whole split; CIFAR is small):
//   PackedFile file(path);                              // checksum checked, metadata read
//   const DatasetInfo& info = file.info();
//   Split train = file.split("train");                  // images uint8 [N,3,32,32], labels int64 [N]
// A rank that only needs a shard can read a contiguous range with hyperslabs:
//   Split part = file.split("train", /*begin=*/1000, /*count=*/500);
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/cifar_data.hpp"

namespace cifar {

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
  std::map<std::string, SplitInfo> splits;                // "train", "test"
  const SplitInfo& split(const std::string& name) const;  // DataError if absent
};

struct Split {
  std::string name;      // "train" or "test"
  int64_t begin = 0;     // first sample of the split held here
  torch::Tensor images;  // uint8 [n,3,32,32], contiguous, CPU
  torch::Tensor labels;  // int64 [n], values 0..9
  SplitInfo info;        // statistics of the whole split (not of this range)
  std::vector<std::string> class_names;
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

// One open packed file. Opening it checks its checksum header (an MD5 over
// the whole file, packed_header.hpp), then opens it with HDF5 and validates
// the whole schema (attributes, dataset shapes and dtypes) without reading
// pixel data -- once: the splits are read from the same HDF5 handle. Not
// thread-safe (HDF5 1.10 is not).
class PackedFile {
 public:
  explicit PackedFile(const std::string& path);
  const DatasetInfo& info() const { return info_; }
  // Reads samples [begin, begin + count) of `split` (count < 0: to the end),
  // verifying every chunk's checksum and every label. When the whole split is
  // read, its class counts must also match the stored ones.
  Split split(const std::string& split, int64_t begin = 0, int64_t count = -1) const;

 private:
  struct Handle;  // the HDF5 file id (HDF5's headers stay out of this header); closed with the last copy
  std::shared_ptr<const Handle> file_;
  DatasetInfo info_;
};

// One read each, for callers that need one thing: PackedFile(path).info()
// and PackedFile(path).split(...). Each checks the whole file's MD5 again, so
// a reader of several splits keeps a PackedFile.
DatasetInfo read_dataset_info(const std::string& path);
Split read_split(const std::string& path, const std::string& split, int64_t begin = 0, int64_t count = -1);

}  // namespace cifar
