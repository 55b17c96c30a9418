// The dataset registry (see dataset.hpp).
#include "data/dataset.hpp"

#include "data/cifar_schema.hpp"
#include "util/registry.hpp"

namespace cifar {
namespace {

// cifar10: the HDF5 file written by cifar_pack (schema in cifar_schema.hpp).
Dataset load_cifar10_h5(const DataConfig& config, bool with_test) {
  Dataset d;
  d.train = read_split(config.path, schema::kTrain);
  if (with_test) d.test = read_split(config.path, schema::kTest);
  return d;
}

struct DatasetEntry {
  const char* name;
  Dataset (*load)(const DataConfig&, bool with_test);
};

const std::vector<DatasetEntry>& registry() {
  static const std::vector<DatasetEntry> entries = {
      {"cifar10", load_cifar10_h5},
  };
  return entries;
}

}  // namespace

std::vector<std::string> dataset_names() { return registered_names(registry()); }

Dataset load_dataset(const DataConfig& config, bool with_test) {
  Dataset d = find_registered(registry(), config.dataset, "dataset").load(config, with_test);
  d.normalization = config.normalize == NormalizeKind::Dataset ? Normalization::from_split(d.train.info)
                                                               : Normalization::recipe();
  return d;
}

}  // namespace cifar
