// Exact per-split statistics of raw CIFAR data (see cifar_data.hpp).
#include "data/cifar_data.hpp"

#include <cmath>

#include "data/cifar_schema.hpp"

namespace cifar {

ChannelStats compute_channel_stats(const RawSplit& split) {
  // Integer sums are exact (60k * 1024 * 255^2 fits easily in 64 bits), so the
  // statistics do not depend on summation order.
  std::array<uint64_t, 3> sum{}, sum_sq{};
  const uint8_t* p = split.images.data();
  for (int64_t i = 0; i < split.count(); ++i) {
    for (int c = 0; c < 3; ++c, p += schema::kPlaneBytes) {
      uint64_t s = 0, q = 0;
      for (int64_t k = 0; k < schema::kPlaneBytes; ++k) {
        s += p[k];
        q += static_cast<uint64_t>(p[k]) * p[k];
      }
      sum[c] += s;
      sum_sq[c] += q;
    }
  }
  ChannelStats stats;
  const double n = static_cast<double>(split.count()) * schema::kPlaneBytes;
  for (int c = 0; c < 3; ++c) {
    stats.pixel_sum[c] = sum[c];
    if (n == 0) continue;
    const double mean = static_cast<double>(sum[c]) / n;
    const double var = static_cast<double>(sum_sq[c]) / n - mean * mean;
    stats.mean[c] = mean / 255.0;
    stats.std[c] = std::sqrt(std::max(var, 0.0)) / 255.0;
  }
  return stats;
}

std::array<int64_t, schema::kNumClasses> count_classes(const RawSplit& split) {
  std::array<int64_t, schema::kNumClasses> counts{};
  for (uint8_t label : split.labels) {
    if (label < counts.size()) ++counts[label];
  }
  return counts;
}

}  // namespace cifar
