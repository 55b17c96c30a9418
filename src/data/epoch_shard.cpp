// One epoch's shard and loader (see epoch_shard.hpp).
#include "data/epoch_shard.hpp"

#include "data/dataset.hpp"

namespace cifar {

EpochShard::EpochShard(const DataConfig& data, int64_t num_samples, int world_size, int rank, int batch_size,
                       const TrainingPosition& place)
    : sampler_{num_samples, world_size,   rank,          static_cast<uint64_t>(data.shuffle_seed),
               place.epoch, data.shuffle, data.drop_last},
      batch_size_(batch_size),
      place_(place) {}

int64_t EpochShard::global_position() const {
  return place_.batch_origin + static_cast<int64_t>(place_.batch_in_epoch) * batch_size_ * sampler_.world_size;
}

long EpochShard::batches() const {
  if (!elastic())
    return static_cast<long>(
        batches_per_epoch(samples_per_rank(sampler_.num_samples, sampler_.world_size, sampler_.drop_last), batch_size_,
                          sampler_.drop_last));
  const int64_t end =
      epoch_end(sampler_.num_samples, place_.order_world_size, place_.order_batch_size, sampler_.drop_last);
  const int64_t micro = static_cast<int64_t>(batch_size_) * sampler_.world_size;
  return static_cast<long>((end - place_.batch_origin + micro - 1) / micro);
}

std::vector<int64_t> EpochShard::indices() const {
  if (!elastic()) return distributed_sampler_indices(sampler_);
  SamplerOptions order = sampler_;  // the beginning run's order: its world size
  order.world_size = place_.order_world_size;
  order.rank = 0;
  return resharded_indices(order, place_.order_batch_size, global_position(),
                           static_cast<int64_t>(batch_size_) * sampler_.world_size, sampler_.world_size, sampler_.rank);
}

LoaderOptions EpochShard::epoch_options(LoaderOptions o) const {
  o.rank = sampler_.rank;
  o.epoch = place_.epoch;
  o.start_batch = place_.batch_in_epoch;  // not 0 when resuming mid-epoch
  if (elastic()) {
    o.start_batch = 0;  // the indices hold only the rest of the epoch
    o.stream = static_cast<uint64_t>(global_position()) + 1;
    o.drop_last = false;  // the indices end where the beginning run's epoch ends, a short last micro-batch included
  }
  return o;
}

BatchLoader EpochShard::loader(const Split& train, const LoaderOptions& run, torch::Device device) const {
  return BatchLoader(train, indices(), batch_size_, epoch_options(run), device);
}

LoaderOptions loader_options(const DataConfig& data, torch::Device device, const Normalization& normalization,
                             uint64_t seed, torch::MemoryFormat format) {
  LoaderOptions o;
  o.normalization = normalization;
  o.augment = data.augment;
  o.pad = data.crop_pad;
  o.padding = data.crop_padding;
  o.flip = data.flip;
  o.jitter = Jitter{data.brightness_jitter, data.contrast_jitter};
  o.resolution = data.resolution;
  o.seed = seed;
  o.drop_last = data.drop_last;
  o.prefetch_depth = static_cast<size_t>(data.prefetch_batches);
  o.memory_format = format;
  o.resident = data_on_device(data, device);
  return o;
}

}  // namespace cifar
