// The dataset registry: --dataset NAME reads the training (and test) split
// from --data into memory, in the one form the trainer and the loader use
// (Split: uint8 images [N,3,32,32], int64 labels, per-split statistics).
// Adding a dataset is one entry in dataset.cpp (docs/extending.md).
#pragma once

#include <string>
#include <vector>

#include "config/train_config.hpp"
#include "data/batch_transform.hpp"
#include "data/hdf5_dataset.hpp"

namespace cifar {

struct Dataset {
  Split train;  // without images when not asked for, but always with its statistics (info)
  Split test;   // empty when not asked for
  Normalization normalization;  // what --normalize asks for, for these images
  // Names the training data's content: equal texts mean the same samples in
  // the same order (a resumed run must train on the data its checkpoint did).
  std::string identity;
};

// Which splits' images to read. The training split's statistics are read in
// any case: --normalize dataset takes them for the test images too.
struct SplitRequest {
  bool train = true;
  bool test = true;
};

std::vector<std::string> dataset_names();

// Reads `config.dataset` from `config.path`, the splits `request` asks for.
// Throws DataError naming the file and the problem, ConfigError for an
// unknown dataset name.
Dataset load_dataset(const DataConfig& config, SplitRequest request);

}  // namespace cifar
