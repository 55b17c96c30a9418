// Test-set evaluation, distributed: each rank scores its stride of the test
// split (no padding, so no sample counts twice); loss sums and the confusion
// matrix are all-reduced in one collective, so every rank returns the same
// numbers. The trainer (after each epoch) and cifar_eval both use it.
//
// Test-time augmentation: each image is scored in several views and the
// views' logits are averaged. A view is the training augmentation's crop and
// flip (data/batch_transform.hpp) with fixed draws, so train and test see
// the same transformations.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "data/batch_transform.hpp"
#include "data/hdf5_dataset.hpp"
#include "model/model.hpp"

namespace cifar {

// The crop at (kViewPad + dy, kViewPad + dx) of the image zero-padded by
// kViewPad pixels, mirrored afterwards when `flip`: the image shifted by
// (-dy, -dx). {0, 0, false} is the image itself.
struct EvalView {
  int dy = 0;
  int dx = 0;
  bool flip = false;
};
inline constexpr int kViewPad = 2;

// --tta: the image and its mirror, each as is and shifted 2 pixels up, down,
// left and right: 10 views.
std::vector<EvalView> tta_views();

struct EvalOptions {
  int64_t batch_size = 1000;  // images per forward pass per rank
  std::vector<EvalView> views = {EvalView{}};
  torch::Device device = torch::kCPU;  // where the model runs
  torch::MemoryFormat format = torch::MemoryFormat::Contiguous;
};

struct Evaluation {
  double loss = 0;      // mean cross-entropy of the (view-averaged) logits
  double accuracy = 0;  // fraction of the split classified correctly
  int64_t samples = 0;
  // confusion[t * kNumClasses + p]: images of true class t predicted as p.
  std::vector<int64_t> confusion;

  int64_t count(int true_class, int predicted) const;
  int64_t correct() const;                       // the diagonal's sum
  int64_t class_count(int true_class) const;     // images of that class
  double class_accuracy(int true_class) const;   // 0 for a class with no images
};

// Collective over `comm`. `test` may live on the CPU or on options.device.
// Leaves the model in training mode.
Evaluation evaluate(Model& model, const Split& test, const Normalization& normalization, Communicator& comm,
                    const EvalOptions& options);

}  // namespace cifar
