// Test-set evaluation, distributed: each rank scores its stride of the test
// split (no padding, so no sample counts twice); correct counts and loss sums
// are all-reduced, so every rank returns the same numbers.
//
// Test-time augmentation averages the logits of several views of each image,
// as the CIFAR-10 speed recipes do:
//   mirror            (f(x) + f(mirror x)) / 2
//   mirror-translate  (mirror(x) + (mirror(x shifted up-left by 1) + mirror(x shifted down-right by 1)) / 2) / 2,
//                     the shifts with the image reflected at its edges
#pragma once

#include <torch/torch.h>

#include "comm/communicator.hpp"
#include "config/choices.hpp"
#include "data/batch_transform.hpp"
#include "data/hdf5_dataset.hpp"
#include "model/model.hpp"

namespace cifar {

struct Evaluation {
  double loss = 0;      // mean cross-entropy (of the averaged logits with test-time augmentation)
  double accuracy = 0;  // fraction of the split classified correctly
};

struct EvaluationOptions {
  Normalization normalization;
  torch::MemoryFormat memory_format = torch::MemoryFormat::Contiguous;
  TtaMode tta = TtaMode::None;
  Precision precision = Precision::Fp32;  // autocast of the forward passes
  int64_t batch_size = 1000;
};

// The logits of `images` (a normalised batch) averaged over the views of `tta`.
torch::Tensor tta_logits(Model& model, const torch::Tensor& images, TtaMode tta);

// Collective over `comm`. Leaves the model in training mode.
Evaluation evaluate(Model& model, const Split& test, const EvaluationOptions& options, Communicator& comm,
                    torch::Device device);

}  // namespace cifar
