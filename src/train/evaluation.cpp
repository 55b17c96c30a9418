// Distributed test-set evaluation (see evaluation.hpp).
#include "train/evaluation.hpp"

#include <algorithm>

#include "data/batch_loader.hpp"
#include "train/precision.hpp"

namespace cifar {
namespace {

torch::Tensor mirrored_mean(Model& model, const torch::Tensor& x) {
  return 0.5 * model.forward(x).to(torch::kFloat32) + 0.5 * model.forward(x.flip({3})).to(torch::kFloat32);
}

// x shifted by one pixel both ways, with the image reflected at its edges:
// up-left (the padded image's top-left 32x32 window) and down-right.
std::pair<torch::Tensor, torch::Tensor> one_pixel_shifts(const torch::Tensor& x) {
  const int64_t h = x.size(2), w = x.size(3);
  const auto format = x.suggest_memory_format();
  const auto padded = torch::reflection_pad2d(x.contiguous(), {1, 1, 1, 1});
  return {padded.narrow(2, 0, h).narrow(3, 0, w).contiguous(format),
          padded.narrow(2, 2, h).narrow(3, 2, w).contiguous(format)};
}

}  // namespace

torch::Tensor tta_logits(Model& model, const torch::Tensor& images, TtaMode tta) {
  switch (tta) {
    case TtaMode::None:
      return model.forward(images).to(torch::kFloat32);
    case TtaMode::Mirror:
      return mirrored_mean(model, images);
    case TtaMode::MirrorTranslate: {
      const auto [up_left, down_right] = one_pixel_shifts(images);
      const auto translated = 0.5 * mirrored_mean(model, up_left) + 0.5 * mirrored_mean(model, down_right);
      return 0.5 * mirrored_mean(model, images) + 0.5 * translated;
    }
  }
  return {};
}

Evaluation evaluate(Model& model, const Split& test, const EvaluationOptions& options, Communicator& comm,
                    torch::Device device) {
  torch::NoGradGuard no_grad;
  model.eval();
  std::vector<int64_t> shard;
  for (int64_t i = comm.rank(); i < test.size(); i += comm.size()) shard.push_back(i);
  LoaderOptions opts;
  opts.normalization = options.normalization;
  opts.prefetch_depth = 1;
  opts.memory_format = options.memory_format;
  BatchLoader loader(test, shard, options.batch_size, opts, device);
  auto totals = torch::zeros({3}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  while (auto batch = loader.next()) {
    torch::Tensor logits;
    {
      AutocastScope autocast(options.precision, device);
      logits = tta_logits(model, batch->images, options.tta);
    }
    totals[0] += torch::nn::functional::cross_entropy(
        logits, batch->labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    totals[1] += (logits.argmax(1) == batch->labels).sum();
    totals[2] += batch->labels.size(0);
  }
  comm.all_reduce(totals, ReduceOp::Sum);
  const auto t = totals.cpu();
  const double n = std::max(1.0, t[2].item<double>());
  model.train();
  return {t[0].item<double>() / n, t[1].item<double>() / n};
}

}  // namespace cifar
