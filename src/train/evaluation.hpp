// Test-set evaluation, distributed: each rank scores its stride of the test
// split (no padding, so no sample counts twice); correct counts and loss sums
// are all-reduced, so every rank returns the same numbers.
#pragma once

#include <torch/torch.h>

#include "comm/communicator.hpp"
#include "data/batch_transform.hpp"
#include "data/hdf5_dataset.hpp"
#include "model/model.hpp"

namespace cifar {

struct Evaluation {
  double loss = 0;      // mean cross-entropy
  double accuracy = 0;  // fraction of the split classified correctly
};

// Collective over `comm`. Leaves the model in training mode.
Evaluation evaluate(Model& model, const Split& test, const Normalization& normalization, Communicator& comm,
                    torch::Device device, torch::MemoryFormat format);

}  // namespace cifar
