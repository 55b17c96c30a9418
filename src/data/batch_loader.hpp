// BatchLoader: turns one rank's sample indices (from distributed_sampler_indices)
// into normalised, optionally augmented float batches, preparing the next
// batches on a background thread while the current one trains.
//
//   Split train = read_split(path, "train");
//   auto indices = distributed_sampler_indices({train.size(), world, rank, seed, epoch});
//   LoaderOptions opts;  opts.augment = true;  opts.seed = seed;  opts.rank = rank;  opts.epoch = epoch;
//   BatchLoader loader(train, indices, 256, opts, device);
//   while (auto batch = loader.next()) { model(batch->images); loss(batch->labels); ... }
//
// One loader serves one epoch (the sampler's indices are per epoch); build a new
// one for the next epoch. Batches follow `indices` in order; the last batch is
// smaller unless drop_last. Augmentation draws come from a CPU generator seeded
// by (seed, rank, epoch), so a run is reproducible whatever the device and
// thread timing. An error in the background thread is rethrown by next().
// For a CUDA device, batches are copied from pinned memory with non_blocking
// (ordered on the current stream of the loader thread, the default stream).
// GPU-resident data (options.resident): the split's images were put on the
// device once (place_dataset, data/dataset.hpp), and batches are gathered,
// augmented (crop_and_flip_gather, same draws as on the CPU) and normalised
// on the device, with no CPU work in the loop.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <vector>

#include "config/resolution_schedule.hpp"
#include "data/batch_transform.hpp"
#include "data/hdf5_dataset.hpp"
#include "data/prefetcher.hpp"

namespace cifar {

struct LoaderOptions {
  Normalization normalization = Normalization::recipe();  // or Normalization::from_split(split.info)
  bool augment = false;                                   // random crop (`pad` pixels of padding) + horizontal flip
  int pad = 4;
  CropPadding padding = CropPadding::Zero;
  FlipMode flip = FlipMode::Random;  // Alternating: alternating_flips() of the sample indices
  Jitter jitter;                     // with augment: brightness and contrast of the normalised batch
  ResolutionSchedule resolution;     // the batches' size per epoch, resized last (empty: as stored)
  uint64_t seed = 0;                 // with rank and epoch, seeds the augmentation stream
  int rank = 0;
  int64_t epoch = 0;
  bool drop_last = false;     // drop a final partial batch
  size_t prefetch_depth = 2;  // batches prepared ahead; 0: no thread, prepared inside next()
  // Layout of the float batch: channels_last when the model runs channels_last,
  // so the conversion happens here (on the loader thread) and not in the step.
  torch::MemoryFormat memory_format = torch::MemoryFormat::Contiguous;
  // Resume inside an epoch: batches before this one are skipped, and their
  // augmentation draws are made and discarded, so batch k gets the same crops
  // and flips as in an uninterrupted epoch.
  int64_t start_batch = 0;
  // 0: the (seed, rank, epoch) augmentation stream. Otherwise mixed into its
  // seed: the rest of an epoch resumed at another world size (the trainer
  // passes the global position + 1) draws from a stream of its own, since
  // the old ranks' streams followed shards that no longer exist.
  uint64_t stream = 0;
  // The split's images already live on the loader's device (data_on_device,
  // data/dataset.hpp): batches are built there. The constructor refuses a
  // split that is not where this says, instead of guessing the path.
  bool resident = false;
};

struct Batch {
  torch::Tensor images;   // float [b,3,32,32] on the loader's device (smaller with a resolution schedule)
  torch::Tensor labels;   // int64 [b] on the loader's device
  torch::Tensor indices;  // int64 [b] on the CPU: the samples' indices in the split (for the test-only trace)
};

// Batches in an epoch of `samples` indices: the last one is smaller, or
// dropped with `drop_last`. The one formula for the loader and the run plan.
int64_t batches_per_epoch(int64_t samples, int64_t batch_size, bool drop_last);

class BatchLoader {
 public:
  BatchLoader(const Split& split, std::vector<int64_t> indices, int64_t batch_size, LoaderOptions options,
              torch::Device device = torch::kCPU);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  std::optional<Batch> next();  // nullopt at the end of the epoch
  int64_t num_batches() const { return num_batches_; }

 private:
  std::optional<Batch> produce();  // builds the next batch (runs on the prefetch thread)
  bool resident() const { return options_.resident; }
  void skip_batches(int64_t count);                // advances to batch `count`, drawing and discarding augmentations
  AugmentDraws draw(int64_t begin, int64_t size);  // the augmentation of the batch at `begin`
  // uint8 cropped batch -> float: normalised, jittered, resized to the epoch's size.
  torch::Tensor finish_images(const torch::Tensor& cropped, const AugmentDraws& draws) const;

  torch::Tensor images_, labels_;  // the whole split, uint8 [N,3,32,32] and int64 [N]
  torch::Tensor indices_;          // int64 [num indices], on the split's device
  torch::Tensor host_indices_;     // the same on the CPU (alternating flips are computed there)
  int64_t batch_size_;
  LoaderOptions options_;
  torch::Device device_;
  at::Generator generator_;
  int64_t num_batches_ = 0;
  int64_t produced_ = 0;
  std::unique_ptr<Prefetcher<Batch>> prefetcher_;  // last: its thread uses the members above
};

}  // namespace cifar
