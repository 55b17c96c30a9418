// The dataset registry (see dataset.hpp).
#include "data/dataset.hpp"

#include "data/cifar_schema.hpp"
#include "util/registry.hpp"

namespace cifar {
namespace {

// cifar10: the HDF5 file written by cifar_pack (schema in cifar_schema.hpp).
Dataset load_cifar10_h5(const DataConfig& config, SplitRequest request) {
  Dataset d;
  if (request.train) {
    d.train = read_split(config.path, schema::kTrain);
  } else {
    d.train.name = schema::kTrain;
    d.train.info = read_dataset_info(config.path).split(schema::kTrain);  // metadata only
  }
  if (request.test) d.test = read_split(config.path, schema::kTest);
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
  d.normalization = config.normalize == NormalizeKind::Dataset ? Normalization::from_split(d.train.info)
                                                               : Normalization::recipe();
  return d;
}

}  // namespace cifar
