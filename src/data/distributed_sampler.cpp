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

int64_t global_position(int64_t batches_done, int batch_size, int world_size, int64_t per_rank) {
  return std::min(batches_done * batch_size, per_rank) * world_size;
}

int elastic_batch_size(int batch_size, int world_size, int new_world) {
  const int64_t global = static_cast<int64_t>(batch_size) * world_size;
  if (new_world >= 1 && global % new_world == 0) return static_cast<int>(global / new_world);
  std::string divisors;
  for (int64_t d = 1; d <= global; ++d)
    if (global % d == 0) divisors += (divisors.empty() ? "" : ", ") + std::to_string(d);
  throw ConfigError(strprintf("resume on %d rank(s): the checkpoint's global batch of %lld samples (%d per rank x %d "
                              "ranks) does not divide among %d ranks; resume on %s ranks",
                              new_world, static_cast<long long>(global), batch_size, world_size, new_world,
                              divisors.c_str()));
}

std::vector<int64_t> resharded_indices(const SamplerOptions& written, int batch_size, int64_t position,
                                       int new_world, int new_rank) {
  CIFAR_CHECK(new_world >= 1 && new_rank >= 0 && new_rank < new_world, ConfigError,
              strprintf("resharding: rank %d is outside [0, %d)", new_rank, new_world));
  const std::vector<int64_t> order = global_sample_order(written);
  const int64_t total = static_cast<int64_t>(order.size());
  const int64_t block = static_cast<int64_t>(batch_size) * written.world_size;  // the old global micro-batch
  CIFAR_CHECK(batch_size >= 1 && position >= 0 && position <= total && (position % block == 0 || position == total),
              ConfigError,
              strprintf("resharding: position %lld is not a micro-batch boundary of an epoch of %lld positions on %d "
                        "ranks", static_cast<long long>(position), static_cast<long long>(total),
                        written.world_size));
  // With drop_last the loader drops each rank's final partial micro-batch, so
  // the old run never trains a short last block: the epoch ends at the last
  // full one (and a short block that would not divide is no reason to refuse).
  const int64_t last = written.drop_last ? total / block * block : total;
  std::vector<int64_t> mine;
  for (int64_t start = position, end = 0; start < last; start = end) {
    end = std::min(last, (start / block + 1) * block);  // where the old ranks' batches end
    const int64_t size = end - start;
    if (size % new_world != 0)
      throw ConfigError(strprintf("resume on %d rank(s): the old run's micro-batch at positions [%lld, %lld) of the "
                                  "epoch holds %lld samples, which do not divide among %d ranks; resume on a world "
                                  "size that divides it",
                                  new_world, static_cast<long long>(start), static_cast<long long>(end),
                                  static_cast<long long>(size), new_world));
    for (int64_t k = start + new_rank; k < end; k += new_world) mine.push_back(order[static_cast<size_t>(k)]);
  }
  return mine;
}

}  // namespace cifar
