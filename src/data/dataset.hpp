// The dataset registry: --dataset NAME reads the training (and test) split
// from --data into memory, in the one form the trainer and the loader use
// (Split: uint8 images [N,3,32,32], int64 labels, per-split statistics).
// Adding a dataset is one entry in dataset.cpp (docs/extending.md).
#pragma once

#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "data/batch_transform.hpp"
#include "data/hdf5_dataset.hpp"

namespace cifar {

struct Dataset {
  Split train;                  // without images when not asked for, but always with its statistics (info)
  Split test;                   // empty when not asked for
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

// Where the splits' images live while a rank trains on `device`, decided
// here once: on the GPU itself with --data-on-device (the default; ~150 MB
// of uint8 for CIFAR-10), so that batches are gathered, augmented and
// normalised there with no host work in the loop; else in host memory, and
// each batch is copied over. place_dataset() puts the images there and
// loader_options() (data/epoch_shard.hpp) tells the loader the same.
bool data_on_device(const DataConfig& config, torch::Device device);
// Moves the images of `data`'s splits to `device` when data_on_device says
// so (labels stay on the host; the loader moves them with its indices).
void place_dataset(Dataset& data, const DataConfig& config, torch::Device device);

}  // namespace cifar
