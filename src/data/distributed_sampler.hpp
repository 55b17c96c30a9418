// DistributedSampler: which sample indices one rank sees in one epoch, with the
// exact semantics of PyTorch's torch.utils.data.distributed.DistributedSampler
// (same permutation bit for bit, same padding, same rank striding). A pure
// function of its arguments, so it is tested without MPI against golden files
// written by Python (tests/data/golden, tools/make_sampler_golden.py).
#pragma once

#include <cstdint>
#include <vector>

namespace cifar {

struct SamplerOptions {
  int64_t num_samples = 0;  // size of the dataset split
  int world_size = 1;
  int rank = 0;
  uint64_t seed = 0;  // the same on every rank
  int64_t epoch = 0;  // set_epoch(): a new permutation each epoch
  bool shuffle = true;
  bool drop_last = false;
};

// How many indices each rank gets: ceil(N / W), or floor(N / W) with drop_last.
int64_t samples_per_rank(int64_t num_samples, int world_size, bool drop_last);

// The indices rank `rank` visits in epoch `epoch`, in visiting order.
// shuffle: torch::randperm(N) drawn from a CPU generator seeded with seed + epoch;
// otherwise 0..N-1. Without drop_last the list is padded by wrapping around to
// a multiple of the world size (some samples appear twice in an epoch, as in
// PyTorch); with drop_last the tail is cut. Rank r takes positions r, r+W, ...
// Throws ConfigError for a world size < 1, a rank outside [0, W) or N < 1.
std::vector<int64_t> distributed_sampler_indices(const SamplerOptions& options);

}  // namespace cifar
