// PyTorch-exact DistributedSampler (see distributed_sampler.hpp).
#include "data/distributed_sampler.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

void validate(const SamplerOptions& o) {
  CIFAR_CHECK(o.world_size >= 1, ConfigError, strprintf("sampler: world size %d must be at least 1", o.world_size));
  CIFAR_CHECK(o.rank >= 0 && o.rank < o.world_size, ConfigError,
              strprintf("sampler: rank %d is outside [0, %d)", o.rank, o.world_size));
  CIFAR_CHECK(
      o.num_samples >= 1, ConfigError,
      strprintf("sampler: the split has %lld samples; it needs at least one", static_cast<long long>(o.num_samples)));
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

std::vector<int64_t> global_sample_order(const SamplerOptions& options) {
  SamplerOptions o = options;
  o.rank = 0;
  validate(o);
  const int64_t total = samples_per_rank(o.num_samples, o.world_size, o.drop_last) * o.world_size;
  const std::vector<int64_t> order = epoch_order(o);
  std::vector<int64_t> global(static_cast<size_t>(total));
  for (int64_t k = 0; k < total; ++k) global[static_cast<size_t>(k)] = order[static_cast<size_t>(k % o.num_samples)];
  return global;
}

int64_t epoch_end(int64_t num_samples, int world_size, int batch_size, bool drop_last) {
  const int64_t total = samples_per_rank(num_samples, world_size, drop_last) * world_size;
  const int64_t micro = static_cast<int64_t>(batch_size) * world_size;
  return drop_last ? total / micro * micro : total;
}

std::vector<int64_t> resharded_indices(const SamplerOptions& order, int order_batch, int64_t position, int64_t block,
                                       int new_world, int new_rank) {
  CIFAR_CHECK(new_world >= 1 && new_rank >= 0 && new_rank < new_world, ConfigError,
              strprintf("resharding: rank %d is outside [0, %d)", new_rank, new_world));
  const std::vector<int64_t> global = global_sample_order(order);
  const int64_t end = epoch_end(order.num_samples, order.world_size, order_batch, order.drop_last);
  CIFAR_CHECK(order_batch >= 1 && block >= 1 && position >= 0 && position <= end, ConfigError,
              strprintf("resharding: position %lld is outside the epoch's %lld positions on %d ranks (micro-batch "
                        "%d per rank), or the micro-batch of %lld is empty",
                        static_cast<long long>(position), static_cast<long long>(end), order.world_size, order_batch,
                        static_cast<long long>(block)));
  std::vector<int64_t> mine;
  for (int64_t start = position; start < end; start += block) {
    const int64_t size = std::min(block, end - start);
    // Only the epoch's short last block can fail to divide (a full one is the
    // new ranks' own micro-batch); a run that reaches it is refused at
    // start-up (checkpoint/resume.hpp), so one that is let through stops before it.
    if (size % new_world != 0) break;
    for (int64_t k = start + new_rank; k < start + size; k += new_world) mine.push_back(global[static_cast<size_t>(k)]);
  }
  return mine;
}

}  // namespace cifar
