// Distributed test-set evaluation (see evaluation.hpp).
#include "train/evaluation.hpp"

#include <algorithm>

#include "data/batch_loader.hpp"

namespace cifar {

Evaluation evaluate(Model& model, const Split& test, const Normalization& normalization, Communicator& comm,
                    torch::Device device, torch::MemoryFormat format) {
  torch::NoGradGuard no_grad;
  model.eval();
  std::vector<int64_t> shard;
  for (int64_t i = comm.rank(); i < test.size(); i += comm.size()) shard.push_back(i);
  LoaderOptions opts;
  opts.normalization = normalization;
  opts.prefetch_depth = 1;
  opts.memory_format = format;
  BatchLoader loader(test, shard, 1000, opts, device);
  auto totals = torch::zeros({3}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  while (auto batch = loader.next()) {
    auto logits = model.forward(batch->images).to(torch::kFloat32);
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
