// The data path of one epoch, decided here from DataConfig and where the run
// stands, so that the trainer asks instead of computing: which samples this
// rank trains, how many micro-batches the epoch has, and the loader that
// batches them.
//
//   const LoaderOptions run = loader_options(config.data, device, normalization, seed, format);  // once
//   EpochShard shard(config.data, train.size(), world, rank, batch_size, place);  // each epoch
//   BatchLoader loader = shard.loader(train, run, device);
//   while (auto batch = loader.next()) ...  // batches place.batch_in_epoch .. shard.batches() - 1
//
// Two kinds of epoch:
// - its own: this rank's DistributedSampler shard of this world size's
//   order; resumed mid-epoch, the loader skips the batches already trained
//   (drawing and discarding their augmentations, so the rest gets the crops
//   an uninterrupted epoch would have);
// - elastic (the rest of an epoch that a run of another world size or batch
//   began, resumed from its checkpoint): the rest of that run's global order
//   from the global position, re-sharded over this world so that the ranks'
//   micro-batch m together trains the next block of the order
//   (distributed_sampler.hpp's resharded_indices), ending where that run's
//   epoch ends, a short last micro-batch included. Its augmentation draws
//   come from a stream of their own per (seed, rank, epoch, global
//   position): reproducible, but not the crops the writing ranks would have
//   drawn, whose shards no longer exist.
#pragma once

#include <cstdint>
#include <vector>

#include "config/run_config.hpp"
#include "data/batch_loader.hpp"
#include "data/distributed_sampler.hpp"
#include "data/training_position.hpp"

namespace cifar {

class EpochShard {
 public:
  // `batch_size`: this run's per-rank micro-batch. The sampler's seed,
  // shuffle and drop_last come from `data` (--shuffle-seed, not --seed).
  EpochShard(const DataConfig& data, int64_t num_samples, int world_size, int rank, int batch_size,
             const TrainingPosition& place);  // its step count is not used

  bool elastic() const { return place_.order_world_size != 0; }
  // Samples of the epoch's global order trained so far, over all ranks.
  int64_t global_position() const;
  // Micro-batches this run trains in the epoch, counted from batch_origin:
  // the run plan's batches_per_epoch for an epoch of its own; in an elastic
  // one, as many as reach from the origin to where the beginning run ends it.
  long batches() const;
  // This rank's samples, in training order: the whole epoch's shard for an
  // epoch of its own (the loader skips what was trained), only the rest for
  // an elastic one.
  std::vector<int64_t> indices() const;
  // `run`'s options (loader_options) for this epoch: rank, epoch, the batch
  // to start at, the augmentation stream and whether a short last batch is dropped.
  LoaderOptions epoch_options(LoaderOptions o) const;
  // The epoch's loader over `train`: indices() in batches of the run's
  // micro-batch, with epoch_options(run).
  BatchLoader loader(const Split& train, const LoaderOptions& run, torch::Device device) const;

 private:
  SamplerOptions sampler_;  // this world size's sampler for this rank and epoch
  int batch_size_;
  TrainingPosition place_;
};

// The run's loader options from --crop-pad, --flip, --drop-last, ... once:
// `normalization` for the data's images (Dataset::normalization), `seed`
// (--seed) for the augmentation streams, `format` the model's memory format,
// and residency as data_on_device(data, device) decides it. The epoch's part
// is EpochShard::epoch_options's.
LoaderOptions loader_options(const DataConfig& data, torch::Device device, const Normalization& normalization,
                             uint64_t seed, torch::MemoryFormat format);

}  // namespace cifar
