// Distributed test-set evaluation (see evaluation.hpp).
#include "train/evaluation.hpp"

#include <algorithm>

#include "util/cifar10.hpp"
#include "train/precision.hpp"

namespace cifar {
namespace {

using cifar10::kNumClasses;

bool is_identity(const EvalView& v) { return v.dy == 0 && v.dx == 0 && !v.flip; }

// The same crop and flip for every image of a batch of `size`.
AugmentDraws fixed_draws(const EvalView& v, int64_t size) {
  AugmentDraws d;
  d.offsets = torch::tensor({int64_t{kViewPad + v.dy}, int64_t{kViewPad + v.dx}}, torch::kLong).repeat({size, 1});
  d.flips = torch::full({size}, v.flip, torch::kBool);
  return d;
}

// Logits of a uint8 batch (where the split lives), averaged over the views
// with their weights, in order; one view's are the model's own, unscaled.
torch::Tensor view_logits(Model& model, const torch::Tensor& images, const Normalization& normalization,
                          const EvalOptions& o) {
  torch::Tensor sum;
  for (const EvalView& view : o.views) {
    const torch::Tensor seen = is_identity(view) ? images
                                                 : crop_and_flip_gather(images, fixed_draws(view, images.size(0)),
                                                                        kViewPad, CropPadding::Reflect);
    torch::Tensor logits;
    {
      AutocastScope autocast(o.precision, o.device);
      logits = model.forward(copy_to_device(normalize_batch(seen, normalization, o.format), o.device));
    }
    logits = logits.to(torch::kFloat32);
    if (o.views.size() > 1) logits = logits * view.weight;
    sum = sum.defined() ? sum + logits : logits;
  }
  return sum;
}

// Selective TTA: the plain logits, and the views' for the `tta_fraction`
// least confident images (floor of the fraction of the batch).
torch::Tensor selective_logits(Model& model, const torch::Tensor& images, const Normalization& normalization,
                               const EvalOptions& o) {
  EvalOptions plain = o;
  plain.views = {EvalView{}};
  torch::Tensor logits = view_logits(model, images, normalization, plain);
  const auto k = static_cast<int64_t>(o.tta_fraction * static_cast<double>(images.size(0)));
  if (k <= 0) return logits;
  const torch::Tensor confidence = std::get<0>(torch::softmax(logits, 1).max(1));
  const torch::Tensor uncertain = std::get<1>(confidence.topk(k, 0, /*largest=*/false, /*sorted=*/true));
  const torch::Tensor picked = view_logits(model, images.index_select(0, uncertain.to(images.device())), normalization, o);
  return logits.index_copy(0, uncertain, picked);
}

// This rank's stride of the split, in batches of `batch_size`.
std::vector<torch::Tensor> shard_batches(int64_t samples, int rank, int world, int64_t batch_size,
                                         torch::Device where) {
  std::vector<torch::Tensor> batches;
  if (rank >= samples) return batches;  // more ranks than images: nothing here
  const torch::Tensor shard = torch::arange(rank, samples, world, torch::TensorOptions().dtype(torch::kLong));
  for (int64_t begin = 0; begin < shard.size(0); begin += batch_size)
    batches.push_back(shard.narrow(0, begin, std::min(batch_size, shard.size(0) - begin)).to(where));
  return batches;
}

Evaluation from_totals(const torch::Tensor& totals) {
  const torch::Tensor t = totals.cpu();
  Evaluation e;
  const auto* p = t.data_ptr<double>();
  e.confusion.assign(kNumClasses * kNumClasses, 0);
  for (int i = 0; i < kNumClasses * kNumClasses; ++i) {
    e.confusion[i] = static_cast<int64_t>(p[1 + i]);
    e.samples += e.confusion[i];
  }
  const double n = static_cast<double>(std::max<int64_t>(1, e.samples));
  e.loss = p[0] / n;
  e.accuracy = static_cast<double>(e.correct()) / n;
  return e;
}

}  // namespace

std::vector<EvalView> tta_views(TtaMode mode) {
  switch (mode) {
    case TtaMode::None:
      return {EvalView{}};
    case TtaMode::Mirror:
      return {{0, 0, false, 0.5}, {0, 0, true, 0.5}};
    case TtaMode::MirrorTranslate:
      return {{0, 0, false, 0.25},    {0, 0, true, 0.25},    {-1, -1, false, 0.125},
              {-1, -1, true, 0.125}, {1, 1, false, 0.125}, {1, 1, true, 0.125}};
  }
  return {EvalView{}};
}

int64_t Evaluation::count(int true_class, int predicted) const {
  return confusion.at(static_cast<size_t>(true_class * kNumClasses + predicted));
}

int64_t Evaluation::correct() const {
  int64_t n = 0;
  for (int c = 0; c < kNumClasses; ++c) n += count(c, c);
  return n;
}

int64_t Evaluation::class_count(int true_class) const {
  int64_t n = 0;
  for (int p = 0; p < kNumClasses; ++p) n += count(true_class, p);
  return n;
}

double Evaluation::class_accuracy(int true_class) const {
  const int64_t n = class_count(true_class);
  return n == 0 ? 0.0 : static_cast<double>(count(true_class, true_class)) / static_cast<double>(n);
}

Evaluation evaluate(Model& model, const Split& test, const Normalization& normalization, Communicator& comm,
                    const EvalOptions& options) {
  torch::NoGradGuard no_grad;
  model.eval();
  // [loss sum, confusion matrix]: float64 counts are exact far beyond any test split.
  auto totals = torch::zeros({1 + kNumClasses * kNumClasses},
                             torch::TensorOptions().dtype(torch::kFloat64).device(options.device));
  for (const torch::Tensor& idx :
       shard_batches(test.size(), comm.rank(), comm.size(), options.batch_size, test.images.device())) {
    const torch::Tensor images = test.images.index_select(0, idx);
    const torch::Tensor logits = options.tta_fraction < 1 && options.views.size() > 1
                                     ? selective_logits(model, images, normalization, options)
                                     : view_logits(model, images, normalization, options);
    const torch::Tensor labels = copy_to_device(test.labels.index_select(0, idx.to(test.labels.device())), options.device);
    totals[0] += torch::nn::functional::cross_entropy(
        logits, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    totals.narrow(0, 1, kNumClasses * kNumClasses) +=
        torch::bincount(labels * kNumClasses + logits.argmax(1), {}, kNumClasses * kNumClasses).to(torch::kFloat64);
  }
  comm.all_reduce(totals, ReduceOp::Sum);
  model.train();
  return from_totals(totals);
}

}  // namespace cifar
