// Deterministic synthetic CIFAR-10 (see synthetic.hpp).
#include "pack/synthetic.hpp"

#include <algorithm>

#include "data/cifar_schema.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/md5.hpp"

namespace cifar {
namespace {

// splitmix64: tiny, fast, and fully specified (unlike std distributions).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

// Base colours (R, G, B), far apart so colour alone is already informative.
constexpr uint8_t kClassColour[schema::kNumClasses][3] = {
    {200, 60, 60},  {60, 200, 60},   {60, 60, 200},  {200, 200, 60}, {200, 60, 200},
    {60, 200, 200}, {130, 130, 130}, {220, 140, 60}, {60, 140, 220}, {140, 60, 140}};
constexpr int kStripeAmplitude = 40;
constexpr int kNoiseRange = 64;  // uniform noise in [-32, 31]

void draw_image(int label, SplitMix64& rng, uint8_t* out) {
  const int period = 2 + 2 * (label % 5);  // stripes 1..5 pixels wide
  const bool vertical = label >= 5;
  const int phase = static_cast<int>(rng.next() % 16);
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < schema::kHeight; ++y) {
      for (int x = 0; x < schema::kWidth; x += 8) {
        uint64_t noise = rng.next();  // eight noise bytes per draw
        for (int k = 0; k < 8; ++k, noise >>= 8) {
          const int coord = (vertical ? x + k : y) + phase;
          const int stripe = (coord / (period / 2)) % 2 ? kStripeAmplitude : -kStripeAmplitude;
          const int v = kClassColour[label][c] + stripe + static_cast<int>(noise % kNoiseRange) - kNoiseRange / 2;
          out[(c * schema::kHeight + y) * schema::kWidth + x + k] = static_cast<uint8_t>(std::clamp(v, 0, 255));
        }
      }
    }
  }
}

RawSplit make_split(int64_t count, uint64_t seed) {
  SplitMix64 rng{seed};
  RawSplit split;
  split.labels.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    split.labels[static_cast<size_t>(i)] = static_cast<uint8_t>(i % schema::kNumClasses);
  for (int64_t i = count - 1; i > 0; --i) {  // Fisher-Yates
    std::swap(split.labels[static_cast<size_t>(i)], split.labels[rng.next() % static_cast<uint64_t>(i + 1)]);
  }
  split.images.resize(static_cast<size_t>(count * schema::kImageBytes));
  for (int64_t i = 0; i < count; ++i) {
    draw_image(split.labels[static_cast<size_t>(i)], rng, split.images.data() + i * schema::kImageBytes);
  }
  return split;
}

}  // namespace

CifarData make_synthetic_cifar(int64_t train_count, int64_t test_count, uint64_t seed) {
  CIFAR_CHECK(train_count >= 1 && test_count >= 1, ConfigError,
              strprintf("synthetic data needs at least one train and one test sample (got %lld and %lld)",
                        static_cast<long long>(train_count), static_cast<long long>(test_count)));
  CifarData data;
  data.train = make_split(train_count, seed);
  data.test = make_split(test_count, seed ^ 0x5445535453504c54ULL);  // a different stream for test
  data.class_names = schema::default_class_names();
  Md5 md5;
  md5.update(data.train.images.data(), data.train.images.size());
  md5.update(data.test.images.data(), data.test.images.size());
  data.source.kind = "synthetic";
  data.source.md5 = md5.hex_digest();
  data.source.md5_of = "train then test image bytes";
  data.source.note = strprintf("synthetic CIFAR-shaped data, seed %llu, %lld train / %lld test samples",
                               static_cast<unsigned long long>(seed), static_cast<long long>(train_count),
                               static_cast<long long>(test_count));
  return data;
}

}  // namespace cifar
