// DistributedSampler: which sample indices one rank sees in one epoch, with the
// exact semantics of PyTorch's torch.utils.data.distributed.DistributedSampler
// (same permutation bit for bit, same padding, same rank striding). A pure
// function of its arguments, so it is tested without MPI against golden files
// written by Python (tests/data/golden, dev/make_sampler_golden.py).
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

// ---- Resuming at another world size ----------------------------------------
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

// Where training of an epoch ordered by `world_size` ranks with micro-batches
// of `batch_size` per rank ends in that order: its padded length, or with
// drop_last the end of its last full micro-batch (the loader drops a rank's
// short last one).
int64_t epoch_end(int64_t num_samples, int world_size, int batch_size, bool drop_last);

// The rest of an epoch, re-sharded for rank `new_rank` of `new_world`: the
// positions [position, end) of the global order for `order.world_size` ranks
// (end: epoch_end with `order_batch`, the per-rank micro-batch of the run
// that began the epoch), cut from `position` on into micro-batch blocks of
// `block` samples (the last one may be shorter), each split among the new
// ranks by striding (block offset o goes to rank o mod new_world), so that
// micro-batch m of every new rank together is block m. Every remaining sample
// of the epoch is trained exactly once; with the old run's blocks (block =
// its global micro-batch, elastic_step_shape) every micro-batch trains what
// the old run's would have. A short last block that does not divide among
// the new ranks is left out: the resume rules refuse a run that would reach
// it, and let through one that --max-steps ends before it.
std::vector<int64_t> resharded_indices(const SamplerOptions& order, int order_batch, int64_t position, int64_t block,
                                       int new_world, int new_rank);

}  // namespace cifar
