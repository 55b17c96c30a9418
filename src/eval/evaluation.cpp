// Distributed test-set evaluation (see evaluation.hpp).
#include "eval/evaluation.hpp"

#include <algorithm>

#include "step/precision.hpp"
#include "util/cifar10.hpp"

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

// The logits of one view, the image itself: the first pass of selective TTA.
torch::Tensor plain_logits(Model& model, const torch::Tensor& images, const Normalization& normalization,
                           const EvalOptions& o) {
  EvalOptions plain = o;
  plain.views = {EvalView{}};
  return view_logits(model, images, normalization, plain);
}

// Selective TTA over the whole split: each rank writes its images' top
// softmax probabilities into a split-sized vector (zeros elsewhere), one
// all-reduce gives every rank all of them, and every rank picks the same
// floor(fraction x N) least confident images from the same numbers. Then each
// rank replaces the plain logits of its own picked images with the views'.
// Collective: every rank calls it, with or without batches.
void augment_least_confident(Model& model, const Split& test, const std::vector<torch::Tensor>& batches,
                             std::vector<torch::Tensor>& logits, const Normalization& normalization, Communicator& comm,
                             const EvalOptions& o) {
  const int64_t n = test.size();
  const auto k = static_cast<int64_t>(o.tta_fraction * static_cast<double>(n));
  if (k <= 0) return;  // the same n and fraction on every rank: all return here
  torch::Tensor confidence = torch::zeros({n}, torch::TensorOptions().dtype(torch::kFloat64).device(o.device));
  for (size_t b = 0; b < batches.size(); ++b)
    confidence.index_copy_(0, batches[b].to(o.device),
                           std::get<0>(torch::softmax(logits[b], 1).max(1)).to(torch::kFloat64));
  comm.all_reduce(confidence, ReduceOp::Sum);
  torch::Tensor picked = torch::zeros({n}, torch::TensorOptions().dtype(torch::kBool).device(o.device));
  picked.index_fill_(0, std::get<1>(confidence.topk(k, 0, /*largest=*/false, /*sorted=*/true)), true);
  for (size_t b = 0; b < batches.size(); ++b) {
    const torch::Tensor rows = picked.index_select(0, batches[b].to(o.device)).nonzero().squeeze(1);
    if (rows.numel() == 0) continue;
    const torch::Tensor images = test.images.index_select(0, batches[b].index_select(0, rows.to(batches[b].device())));
    logits[b] = logits[b].index_copy(0, rows, view_logits(model, images, normalization, o));
  }
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
    case TtaMode::None: return {EvalView{}};
    case TtaMode::Mirror: return {{0, 0, false, 0.5}, {0, 0, true, 0.5}};
    case TtaMode::MirrorTranslate:
      return {{0, 0, false, 0.25},   {0, 0, true, 0.25},   {-1, -1, false, 0.125},
              {-1, -1, true, 0.125}, {1, 1, false, 0.125}, {1, 1, true, 0.125}};
    case TtaMode::MirrorTranslateEqual: {
      std::vector<EvalView> views = tta_views(TtaMode::MirrorTranslate);
      for (EvalView& v : views) v.weight = 1.0 / static_cast<double>(views.size());
      return views;
    }
  }
  return {EvalView{}};
}

int64_t Evaluation::count(int true_class, int predicted) const {
  return confusion.at(static_cast<size_t>(true_class) * kNumClasses + static_cast<size_t>(predicted));
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
  const bool selective = options.tta_fraction < 1 && options.views.size() > 1;
  const std::vector<torch::Tensor> batches =
      shard_batches(test.size(), comm.rank(), comm.size(), options.batch_size, test.images.device());
  std::vector<torch::Tensor> logits;  // per batch: a shard's logits are small (10 per image)
  for (const torch::Tensor& idx : batches) {
    const torch::Tensor images = test.images.index_select(0, idx);
    logits.push_back(selective ? plain_logits(model, images, normalization, options)
                               : view_logits(model, images, normalization, options));
  }
  if (selective) augment_least_confident(model, test, batches, logits, normalization, comm, options);
  for (size_t b = 0; b < batches.size(); ++b) {
    const torch::Tensor labels =
        copy_to_device(test.labels.index_select(0, batches[b].to(test.labels.device())), options.device);
    totals[0] += torch::nn::functional::cross_entropy(
        logits[b], labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    totals.narrow(0, 1, kNumClasses * kNumClasses) +=
        torch::bincount(labels * kNumClasses + logits[b].argmax(1), {}, kNumClasses * kNumClasses).to(torch::kFloat64);
  }
  comm.all_reduce(totals, ReduceOp::Sum);
  model.train();
  return from_totals(totals);
}

EvalOptions eval_options(const TrainingConfig& training, Precision precision, torch::Device device,
                         torch::MemoryFormat format) {
  EvalOptions options;  // batches of 1000
  options.views = tta_views(training.tta);
  options.tta_fraction = training.tta_fraction;
  options.device = device;
  options.format = format;
  options.precision = precision;
  return options;
}

}  // namespace cifar
