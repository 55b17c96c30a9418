// The dataset registry (see dataset.hpp).
#include "data/dataset.hpp"

#include "data/cifar_schema.hpp"
#include "util/log.hpp"
#include "util/registry.hpp"

namespace cifar {
namespace {

// The packed file's provenance (the md5 of what cifar_pack read: the archive,
// the extracted batch files, or the synthetic images) and a hash of the
// training split's stored count, class counts and per-channel statistics.
// The packer is deterministic, so this names the samples and their order
// without hashing 150 MB at every start.
std::string h5_identity(const DatasetInfo& info) {
  const SplitInfo& train = info.split(schema::kTrain);
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the statistics' bytes
  auto mix = [&](const void* data, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) {
      hash ^= static_cast<const unsigned char*>(data)[i];
      hash *= 1099511628211ull;
    }
  };
  mix(&train.count, sizeof train.count);
  mix(train.class_counts.data(), sizeof train.class_counts);
  mix(train.mean.data(), sizeof train.mean);
  mix(train.std.data(), sizeof train.std);
  return strprintf("source md5 %s, %lld training samples, statistics %016llx", info.source.md5.c_str(),
                   static_cast<long long>(train.count), static_cast<unsigned long long>(hash));
}

// cifar10: the HDF5 file written by cifar_pack (schema in cifar_schema.hpp).
Dataset load_cifar10_h5(const DataConfig& config, SplitRequest request) {
  Dataset d;
  const PackedFile file(config.path);  // one checksum pass and one HDF5 open for both splits
  const DatasetInfo& info = file.info();
  if (request.train) {
    d.train = file.split(schema::kTrain);
  } else {
    d.train.name = schema::kTrain;
    d.train.info = info.split(schema::kTrain);  // metadata only
  }
  if (request.test) d.test = file.split(schema::kTest);
  d.identity = h5_identity(info);
  return d;
}

struct DatasetEntry {
  const char* name;
  Dataset (*load)(const DataConfig&, SplitRequest);
};

const std::vector<DatasetEntry>& registry() {
  static const std::vector<DatasetEntry> entries = {
      {"cifar10", load_cifar10_h5},
  };
  return entries;
}

}  // namespace

std::vector<std::string> dataset_names() { return registered_names(registry()); }

Dataset load_dataset(const DataConfig& config, SplitRequest request) {
  Dataset d = find_registered(registry(), config.dataset, "dataset").load(config, request);
  d.normalization =
      config.normalize == NormalizeKind::Dataset ? Normalization::from_split(d.train.info) : Normalization::recipe();
  return d;
}

bool data_on_device(const DataConfig& config, torch::Device device) { return device.is_cuda() && config.on_device; }

void place_dataset(Dataset& data, const DataConfig& config, torch::Device device) {
  if (!data_on_device(config, device)) return;
  data.train.images = data.train.images.to(device);
  if (data.test.size() > 0) data.test.images = data.test.images.to(device);
}

}  // namespace cifar
