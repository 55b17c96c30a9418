// Batch assembly and prefetching (see batch_loader.hpp).
#include "data/batch_loader.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {
// Distinct, well-mixed generator seeds per (seed, rank, epoch).
// A non-zero `stream` is mixed in last, so the ordinary streams stay as they were.
uint64_t augmentation_seed(uint64_t seed, int rank, int64_t epoch, uint64_t stream) {
  uint64_t h = seed ^ 0x9e3779b97f4a7c15ULL;
  const auto mix = [&h](uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ULL;
  };
  mix(static_cast<uint64_t>(rank));
  mix(static_cast<uint64_t>(epoch));
  if (stream != 0) mix(stream);
  return h;
}
}  // namespace

int64_t batches_per_epoch(int64_t samples, int64_t batch_size, bool drop_last) {
  return drop_last ? samples / batch_size : (samples + batch_size - 1) / batch_size;
}

BatchLoader::BatchLoader(const Split& split, std::vector<int64_t> indices, int64_t batch_size, LoaderOptions options,
                         torch::Device device)
    : images_(split.images),
      labels_(split.labels),
      batch_size_(batch_size),
      options_(options),
      device_(device),
      generator_(at::detail::createCPUGenerator(
          augmentation_seed(options.seed, options.rank, options.epoch, options.stream))) {
  CIFAR_CHECK(batch_size >= 1, ConfigError,
              strprintf("batch size %lld must be at least 1", static_cast<long long>(batch_size)));
  CIFAR_CHECK(images_.defined() && images_.scalar_type() == torch::kUInt8 && images_.dim() == 4, DataError,
              "BatchLoader needs a split with uint8 images [N,3,32,32] (use read_split)");
  // A device without an index ("cuda") is the current one: indices are compared only when both name one.
  const torch::Device held = images_.device();
  const bool on_device =
      held.type() == device_.type() && (!held.has_index() || !device_.has_index() || held.index() == device_.index());
  CIFAR_CHECK(
      options_.resident ? on_device : held.is_cpu(), Error,
      strprintf("BatchLoader: split '%s' has its images on %s, and the loader was told they are %s", split.name.c_str(),
                held.str().c_str(), options_.resident ? ("on " + device_.str()).c_str() : "in host memory"));
  const int64_t n = images_.size(0);
  for (int64_t i : indices) {
    CIFAR_CHECK(i >= 0 && i < n, DataError,
                strprintf("sample index %lld is outside split '%s' of %lld samples", static_cast<long long>(i),
                          split.name.c_str(), static_cast<long long>(n)));
  }
  const auto count = static_cast<int64_t>(indices.size());
  indices_ = torch::from_blob(indices.data(), {count}, torch::kLong).clone();
  host_indices_ = indices_;
  if (resident()) {
    // The split already lives on the device: gather, augment and normalise
    // there; no host work per batch, so no prefetch thread either.
    indices_ = indices_.to(images_.device());
    labels_ = labels_.to(images_.device());
    options_.prefetch_depth = 0;
  }
  num_batches_ = batches_per_epoch(count, batch_size, options_.drop_last);
  skip_batches(std::clamp<int64_t>(options_.start_batch, 0, num_batches_));
  if (options_.prefetch_depth > 0) {
    prefetcher_ = std::make_unique<Prefetcher<Batch>>([this] { return produce(); }, options_.prefetch_depth);
  }
}

BatchLoader::~BatchLoader() = default;

void BatchLoader::skip_batches(int64_t count) {
  for (; produced_ < count; ++produced_) {
    const int64_t size = std::min(batch_size_, indices_.size(0) - produced_ * batch_size_);
    if (options_.augment) draw_augmentation(size, options_.pad, generator_, options_.jitter);
  }
}

std::optional<Batch> BatchLoader::next() { return prefetcher_ ? prefetcher_->next() : produce(); }

AugmentDraws BatchLoader::draw(int64_t begin, int64_t size) {
  AugmentDraws draws = draw_augmentation(size, options_.pad, generator_, options_.jitter);
  if (options_.flip == FlipMode::Alternating)
    draws.flips = alternating_flips(host_indices_.narrow(0, begin, size), options_.seed, options_.epoch);
  return draws;
}

torch::Tensor BatchLoader::finish_images(const torch::Tensor& cropped, const AugmentDraws& draws) const {
  const torch::Tensor images =
      apply_jitter(normalize_batch(cropped, options_.normalization, options_.memory_format), draws);
  return resize_batch(images, options_.resolution.size_at(options_.epoch), options_.memory_format);
}

std::optional<Batch> BatchLoader::produce() {
  if (produced_ >= num_batches_) return std::nullopt;
  const int64_t begin = produced_ * batch_size_;
  const int64_t size = std::min(batch_size_, indices_.size(0) - begin);
  const torch::Tensor idx = indices_.narrow(0, begin, size);
  Batch batch;
  batch.indices = host_indices_.narrow(0, begin, size);
  ++produced_;
  torch::Tensor raw = images_.index_select(0, idx);
  batch.labels = labels_.index_select(0, idx);
  AugmentDraws draws;
  if (options_.augment) draws = draw(begin, size);
  if (resident()) {
    if (options_.augment) raw = crop_and_flip_gather(raw, draws, options_.pad, options_.padding);
    batch.images = finish_images(raw, draws);
    return batch;
  }
  if (options_.augment) raw = crop_and_flip(raw, draws, options_.pad, options_.padding);
  batch.images = copy_to_device(finish_images(raw, draws), device_);
  batch.labels = copy_to_device(batch.labels, device_);
  return batch;
}

}  // namespace cifar
