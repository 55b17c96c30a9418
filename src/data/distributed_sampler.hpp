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

// ---- Resuming at another world size (issue 16, item 1) ---------------------
//
// The epoch's global order is the padded (or cut) list above before striding:
// position k holds sample order[k mod N], k < samples_per_rank * W. After
// `b` micro-batches of B per rank, every rank has taken its first b*B
// indices, which are exactly positions [0, b*B*W): a run's place in an epoch
// is one number, the global position, whatever the world size. Micro-batch
// m is the contiguous block [m*G, m*G + g_m) with G = B*W (g_m smaller for
// the epoch's last one).

// The epoch's global order for `options.world_size` ranks (rank ignored).
std::vector<int64_t> global_sample_order(const SamplerOptions& options);

// Global position after `batches_done` micro-batches of `batch_size` per rank.
int64_t global_position(int64_t batches_done, int batch_size, int world_size, int64_t per_rank);

// The rest of the epoch that a run on `written.world_size` ranks with
// `batch_size` per rank had reached at `position`, re-sharded for rank
// `new_rank` of `new_world`: each remaining micro-batch block of the old run
// is split among the new ranks by striding (block offset o goes to rank
// o mod new_world). With a per-rank batch of G / new_world (elastic_batch_size)
// every micro-batch, and so every optimiser step, trains the same samples
// as the old run's did, and every remaining sample of the epoch is trained
// exactly once (with drop_last: up to the last full block, as the loader
// drops the short one). Throws ConfigError, naming the numbers, when a
// remaining block does not divide among the new ranks.
std::vector<int64_t> resharded_indices(const SamplerOptions& written, int batch_size, int64_t position,
                                       int new_world, int new_rank);

// The per-rank micro-batch that keeps the old global micro-batch of
// `batch_size` * `world_size` on `new_world` ranks, or ConfigError naming the
// numbers and the world sizes that would divide it.
int elastic_batch_size(int batch_size, int world_size, int new_world);

}  // namespace cifar
