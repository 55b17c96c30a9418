// Test-set evaluation, distributed: each rank scores its stride of the test
// split (no padding, so no sample counts twice); loss sums and the confusion
// matrix are all-reduced in one collective, so every rank returns the same
// numbers. The trainer (after each epoch) and cifar_eval both use it.
//
// Test-time augmentation: each image is scored in several views and the
// views' logits are averaged with the views' weights. A view is the training
// augmentation's crop and flip (data/batch_transform.hpp) with fixed draws
// and reflected padding, so train and test see the same transformations.
// --tta (the CIFAR-10 speed-record recipes' test-time augmentation):
//   none                    the image
//   mirror                  (f(x) + f(mirror x)) / 2
//   mirror-translate        mirror(x) / 2 + (mirror(x shifted up-left by 1) + mirror(x shifted down-right by 1)) / 4
//                           (airbench94's weights; the CIFAR-10 record harness scores every record recipe so)
//   mirror-translate-equal  the same six views, each weighing 1/6 (the Hiverge record recipe's)
// With --tta-fraction f < 1 (selective TTA, as the Hiverge record recipe's
// 0.25): only the floor(f x N) least confident images of the whole test split
// (by the largest softmax probability of their plain logits) get the views;
// the others keep their plain logits. The choice is made over the split, not
// per rank or batch, so it is the same at any world size and batch size.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "config/choices.hpp"
#include "config/run_config.hpp"
#include "data/batch_transform.hpp"
#include "data/hdf5_dataset.hpp"
#include "model/model.hpp"

namespace cifar {

// The crop at (kViewPad + dy, kViewPad + dx) of the image padded by
// kViewPad reflected pixels, mirrored afterwards when `flip`: the image
// shifted by (-dy, -dx). {0, 0, false} is the image itself. `weight`: its
// share of the averaged logits (the weights of a view list add up to 1).
struct EvalView {
  int dy = 0;
  int dx = 0;
  bool flip = false;
  double weight = 1.0;
};
inline constexpr int kViewPad = 2;

// The views of a --tta mode, as listed above.
std::vector<EvalView> tta_views(TtaMode mode);

struct EvalOptions {
  int64_t batch_size = 1000;  // images per forward pass per rank
  std::vector<EvalView> views = {EvalView{}};
  torch::Device device = torch::kCPU;  // where the model runs
  torch::MemoryFormat format = torch::MemoryFormat::Contiguous;
  Precision precision = Precision::Fp32;  // autocast of the forward passes
  double tta_fraction = 1.0;              // of the split, the least confident, that get the views (selective TTA)
};

// The options of the evaluation during training: --tta and --tta-fraction of
// `training`, in the run's `precision` (auto resolved), on `device` in the
// model's memory `format`.
EvalOptions eval_options(const TrainingConfig& training, Precision precision, torch::Device device,
                         torch::MemoryFormat format);

struct Evaluation {
  double loss = 0;      // mean cross-entropy of the (view-averaged) logits
  double accuracy = 0;  // fraction of the split classified correctly
  int64_t samples = 0;
  // confusion[t * kNumClasses + p]: images of true class t predicted as p.
  std::vector<int64_t> confusion;

  int64_t count(int true_class, int predicted) const;
  int64_t correct() const;                      // the diagonal's sum
  int64_t class_count(int true_class) const;    // images of that class
  double class_accuracy(int true_class) const;  // 0 for a class with no images
};

// Collective over `comm`. `test` may live on the CPU or on options.device.
// Leaves the model in training mode.
Evaluation evaluate(Model& model, const Split& test, const Normalization& normalization, Communicator& comm,
                    const EvalOptions& options);

}  // namespace cifar
