// PyTorch-exact DistributedSampler (see distributed_sampler.hpp).
#include "data/distributed_sampler.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

void validate(const SamplerOptions& o) {
  CIFAR_CHECK(o.world_size >= 1, ConfigError,
              strprintf("sampler: world size %d must be at least 1", o.world_size));
  CIFAR_CHECK(o.rank >= 0 && o.rank < o.world_size, ConfigError,
              strprintf("sampler: rank %d is outside [0, %d)", o.rank, o.world_size));
  CIFAR_CHECK(o.num_samples >= 1, ConfigError,
              strprintf("sampler: the split has %lld samples; it needs at least one",
                        static_cast<long long>(o.num_samples)));
  CIFAR_CHECK(!o.drop_last || o.num_samples >= o.world_size, ConfigError,
              strprintf("sampler: drop_last with %lld samples and %d ranks leaves every rank empty; "
                        "use fewer ranks or turn drop_last off",
                        static_cast<long long>(o.num_samples), o.world_size));
}

// The epoch's order of the whole split, before padding and striding.
std::vector<int64_t> epoch_order(const SamplerOptions& o) {
  std::vector<int64_t> order(static_cast<size_t>(o.num_samples));
  if (!o.shuffle) {
    for (int64_t i = 0; i < o.num_samples; ++i) order[static_cast<size_t>(i)] = i;
    return order;
  }
  // Python: g = torch.Generator(); g.manual_seed(seed + epoch); torch.randperm(N, generator=g).
  // manual_seed takes the seed modulo 2^64, as the unsigned addition here does.
  at::Generator generator = at::detail::createCPUGenerator(o.seed + static_cast<uint64_t>(o.epoch));
  torch::Tensor perm = torch::randperm(o.num_samples, generator, torch::kLong);
  const int64_t* p = perm.data_ptr<int64_t>();
  std::copy(p, p + o.num_samples, order.begin());
  return order;
}

}  // namespace

int64_t samples_per_rank(int64_t num_samples, int world_size, bool drop_last) {
  // PyTorch's drop_last formula ceil((N - W) / W) equals floor(N / W).
  if (drop_last) return num_samples / world_size;
  return (num_samples + world_size - 1) / world_size;
}

std::vector<int64_t> distributed_sampler_indices(const SamplerOptions& o) {
  validate(o);
  const int64_t per_rank = samples_per_rank(o.num_samples, o.world_size, o.drop_last);
  const int64_t total = per_rank * o.world_size;
  const std::vector<int64_t> order = epoch_order(o);

  // Position k of the padded (or truncated) list is order[k mod N]: padding
  // repeats the list from its start, as many times as needed.
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank));
  for (int64_t k = o.rank; k < total; k += o.world_size) {
    mine.push_back(order[static_cast<size_t>(k % o.num_samples)]);
  }
  return mine;
}

}  // namespace cifar
