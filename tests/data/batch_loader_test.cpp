// Normalisation, crop/flip augmentation, batching and the prefetch thread,
// each against an answer computed independently (per-pixel reference loops).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <stdexcept>
#include <vector>

#include "data/batch_loader.hpp"
#include "data/batch_transform.hpp"
#include "data/prefetcher.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

Split random_split(int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  Split s;
  s.name = "train";
  s.images = torch::randint(0, 256, {n, 3, 32, 32}, torch::kLong).to(torch::kUInt8);
  s.labels = torch::randint(0, 10, {n}, torch::kLong);
  return s;
}

// torchvision's ToTensor + Normalize(mean, std) on a [3,H,W] uint8 image:
// x.float().div(255), then sub_ and div_ by float32 [3,1,1] mean and std.
torch::Tensor torchvision_normalize(const torch::Tensor& images, const Normalization& n) {
  auto per_channel = [](const std::array<double, 3>& v) {
    const std::vector<float> values(v.begin(), v.end());  // float32, as torch.as_tensor(mean, dtype=float32)
    return torch::tensor(values).view({3, 1, 1});
  };
  return images.to(torch::kFloat).div(255).sub_(per_channel(n.mean)).div_(per_channel(n.std));
}

TEST(BatchTransform, RecipeNormalisationIsToTensorThenNormalizeHalf) {
  // Every pixel value, in every channel: bit-identical to torchvision's order
  // (x / 127.5 - 1 in one multiply-add differs by an ulp for most values).
  const torch::Tensor x = torch::arange(256, torch::kLong).to(torch::kUInt8).repeat({3 * 4}).view({1, 3, 32, 32});
  const torch::Tensor got = normalize_batch(x, Normalization::recipe());
  EXPECT_TRUE(torch::equal(got, torchvision_normalize(x[0], Normalization::recipe()).unsqueeze(0)));
  EXPECT_TRUE(torch::equal(got, x.to(torch::kFloat).div(255).sub(0.5).div(0.5)));
  auto out = got.accessor<float, 4>();
  for (int64_t i = 0; i < 32 * 32; ++i) {  // plain float arithmetic, one rounding per step
    const int p = static_cast<int>(i % 256);
    const float want = (static_cast<float>(p) / 255.0f - 0.5f) / 0.5f;
    ASSERT_EQ(out[0][1][i / 32][i % 32], want) << "pixel value " << p;
  }
  EXPECT_FLOAT_EQ(got.min().item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(got.max().item<float>(), 1.0f);
}

TEST(BatchTransform, ChannelsLastOutputHasTheSameValues) {
  const Split s = random_split(8, 3);
  const torch::Tensor nchw = normalize_batch(s.images, Normalization::recipe());
  const torch::Tensor nhwc = normalize_batch(s.images, Normalization::recipe(), torch::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(nhwc.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(nchw.is_contiguous());
  EXPECT_TRUE(torch::equal(nchw, nhwc));
}

TEST(BatchTransform, FileStatisticsNormalisePerChannel) {
  Normalization n{{0.1, 0.2, 0.3}, {0.25, 0.5, 1.0}};
  const torch::Tensor x = torch::full({2, 3, 32, 32}, 51, torch::kUInt8);  // 51/255 = 0.2
  const torch::Tensor got = normalize_batch(x, n);
  EXPECT_NEAR(got[1][0][5][5].item<float>(), (0.2 - 0.1) / 0.25, 1e-6);
  EXPECT_NEAR(got[1][1][5][5].item<float>(), 0.0, 1e-6);
  EXPECT_NEAR(got[1][2][5][5].item<float>(), -0.1, 1e-6);
  const torch::Tensor every = torch::arange(256, torch::kLong).to(torch::kUInt8).repeat({3 * 4}).view({1, 3, 32, 32});
  EXPECT_TRUE(torch::equal(normalize_batch(every, n), torchvision_normalize(every[0], n).unsqueeze(0)));
}

TEST(BatchTransform, CropAndFlipMatchPerPixelReference) {
  const Split s = random_split(64, 5);
  at::Generator gen = at::detail::createCPUGenerator(17);
  const AugmentDraws d = draw_augmentation(64, 4, gen);
  EXPECT_GT(d.flips.sum().item<int64_t>(), 10);  // both outcomes occur
  const torch::Tensor got = crop_and_flip(s.images, d, 4);
  auto in = s.images.accessor<uint8_t, 4>();
  auto out = got.accessor<uint8_t, 4>();
  for (int64_t b = 0; b < 64; ++b) {
    const int64_t oy = d.offsets[b][0].item<int64_t>(), ox = d.offsets[b][1].item<int64_t>();
    const bool flip = d.flips[b].item<bool>();
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t y = 0; y < 32; ++y)
        for (int64_t x = 0; x < 32; ++x) {
          // torchvision: crop the zero-padded image at (oy, ox), then mirror.
          const int64_t px = (flip ? 31 - x : x) + ox - 4, py = y + oy - 4;
          const int want = (py >= 0 && py < 32 && px >= 0 && px < 32) ? in[b][c][py][px] : 0;
          ASSERT_EQ(out[b][c][y][x], want) << "sample " << b << " c" << c << " y" << y << " x" << x;
        }
  }
}

// Brightness and contrast jitter on the normalised batch: image x becomes
// (x + b) c per sample, b in [-0.14, 0.14], c in [0.87, 1.13]; the crops and
// flips drawn first are those of the same stream without jitter, and without
// jitter nothing more is drawn.
TEST(BatchTransform, JitterShiftsThenScalesEachImage) {
  at::Generator plain_gen = at::detail::createCPUGenerator(31), jitter_gen = at::detail::createCPUGenerator(31);
  const AugmentDraws plain = draw_augmentation(40, 2, plain_gen);
  const AugmentDraws d = draw_augmentation(40, 2, jitter_gen, Jitter{0.14, 0.13});
  EXPECT_TRUE(torch::equal(plain.offsets, d.offsets) && torch::equal(plain.flips, d.flips));
  EXPECT_FALSE(plain.brightness.defined());
  ASSERT_EQ(d.brightness.sizes().vec(), (std::vector<int64_t>{40, 1, 1, 1}));
  EXPECT_LE(d.brightness.abs().max().item<float>(), 0.14f);
  EXPECT_LE((d.contrast - 1).abs().max().item<float>(), 0.13f);
  EXPECT_GT(d.brightness.std().item<float>(), 0.03f) << "the shifts differ between images";
  const torch::Tensor x = torch::linspace(-2, 2, 3 * 4 * 4).view({1, 3, 4, 4}).expand({40, 3, 4, 4});
  const torch::Tensor got = apply_jitter(x, d);
  for (int64_t b : {0, 17, 39}) {
    const float bb = d.brightness[b].item<float>(), cc = d.contrast[b].item<float>();
    EXPECT_FLOAT_EQ(got[b][0][0][0].item<float>(), (-2.0f + bb) * cc);
    EXPECT_FLOAT_EQ(got[b][2][3][3].item<float>(), (2.0f + bb) * cc);
  }
  EXPECT_TRUE(torch::equal(apply_jitter(x, plain), x)) << "no jitter drawn: unchanged";
}

TEST(BatchTransform, GatherCropAndFlipEqualsTheLoop) {
  // The GPU-resident path's tensor version, checked on the CPU against the loop.
  const Split s = random_split(64, 9);
  at::Generator gen = at::detail::createCPUGenerator(23);
  const AugmentDraws d = draw_augmentation(64, 4, gen);
  EXPECT_TRUE(torch::equal(crop_and_flip_gather(s.images, d, 4), crop_and_flip(s.images, d, 4)));
}

TEST(BatchTransform, ReflectedCropMatchesTorchsReflectPad) {
  // F.pad(x, (p,)*4, 'reflect') then the crop at the drawn offset, then the mirror.
  const Split s = random_split(32, 11);
  at::Generator gen = at::detail::createCPUGenerator(29);
  const int pad = 2;
  const AugmentDraws d = draw_augmentation(32, pad, gen);
  const torch::Tensor padded = torch::reflection_pad2d(s.images.to(torch::kFloat), {pad, pad, pad, pad});
  const torch::Tensor got = crop_and_flip(s.images, d, pad, CropPadding::Reflect);
  for (int64_t b = 0; b < 32; ++b) {
    const int64_t oy = d.offsets[b][0].item<int64_t>(), ox = d.offsets[b][1].item<int64_t>();
    torch::Tensor want = padded[b].narrow(1, oy, 32).narrow(2, ox, 32);
    if (d.flips[b].item<bool>()) want = want.flip({2});
    ASSERT_TRUE(torch::equal(got[b], want.to(torch::kUInt8))) << "sample " << b;
  }
  EXPECT_TRUE(torch::equal(crop_and_flip_gather(s.images, d, pad, CropPadding::Reflect), got));
}

TEST(BatchTransform, AlternatingFlipsSwapEveryEpochAndIgnoreTheSharding) {
  const torch::Tensor all = torch::arange(1000, torch::kLong);
  const torch::Tensor even = alternating_flips(all, 7, 0), odd = alternating_flips(all, 7, 1);
  EXPECT_TRUE(torch::equal(odd, even.logical_not())) << "each image is mirrored in exactly one of two epochs";
  EXPECT_TRUE(torch::equal(alternating_flips(all, 7, 2), even));
  const int64_t mirrored = even.sum().item<int64_t>();
  EXPECT_GT(mirrored, 430);  // about half: a fair bit per image
  EXPECT_LT(mirrored, 570);
  // A rank's shard gets the bits of its own samples, whatever the shard.
  const torch::Tensor shard = torch::tensor({999, 3, 500}, torch::kLong);
  EXPECT_TRUE(torch::equal(alternating_flips(shard, 7, 0), even.index_select(0, shard)));
  EXPECT_FALSE(torch::equal(alternating_flips(all, 8, 0), even)) << "the seed chooses the half";
}

TEST(BatchLoader, BatchesFollowTheIndicesAndNormalise) {
  const Split s = random_split(100, 6);
  std::vector<int64_t> indices;
  for (int64_t i = 99; i >= 0; i -= 3) indices.push_back(i);  // 34 indices
  LoaderOptions opts;
  BatchLoader loader(s, indices, 8, opts);
  EXPECT_EQ(loader.num_batches(), 5);
  int64_t seen = 0, batches = 0;
  while (auto batch = loader.next()) {
    ++batches;
    for (int64_t j = 0; j < batch->labels.size(0); ++j, ++seen) {
      const int64_t i = indices[static_cast<size_t>(seen)];
      EXPECT_EQ(batch->labels[j].item<int64_t>(), s.labels[i].item<int64_t>());
      EXPECT_TRUE(torch::equal(batch->images[j], torchvision_normalize(s.images[i], Normalization::recipe())));
    }
  }
  EXPECT_EQ(seen, 34);
  EXPECT_EQ(batches, 5);  // the last batch holds 2
}

TEST(BatchLoader, AugmentationIsReproducibleAndDiffersPerRankAndEpoch) {
  const Split s = random_split(40, 7);
  std::vector<int64_t> indices(40);
  for (int64_t i = 0; i < 40; ++i) indices[static_cast<size_t>(i)] = i;
  auto first_batch = [&](int rank, int64_t epoch, size_t depth) {
    LoaderOptions o;
    o.augment = true;
    o.seed = 3;
    o.rank = rank;
    o.epoch = epoch;
    o.prefetch_depth = depth;
    BatchLoader loader(s, indices, 40, o);
    return loader.next()->images;
  };
  const torch::Tensor a = first_batch(0, 0, 2);
  EXPECT_TRUE(torch::equal(a, first_batch(0, 0, 0)));  // thread or not, same draws
  EXPECT_FALSE(torch::equal(a, first_batch(1, 0, 2)));
  EXPECT_FALSE(torch::equal(a, first_batch(0, 1, 2)));
}

// Bilinear, align_corners false, no antialiasing (F.interpolate's defaults,
// the record recipe's resize): output pixel j reads the input at
// (j + 0.5) x 32/24 - 0.5, between two pixels, weighted by nearness.
TEST(BatchTransform, ResizeIsBilinearWithoutAlignedCornersOrAntialiasing) {
  const torch::Tensor constant = torch::full({2, 3, 32, 32}, 0.25f);
  EXPECT_TRUE(torch::allclose(resize_batch(constant, 24), torch::full({2, 3, 24, 24}, 0.25f)));
  // A ramp across the columns is read exactly at the source coordinate.
  const torch::Tensor ramp = torch::arange(32, torch::kFloat).view({1, 1, 1, 32}).expand({1, 3, 32, 32});
  const torch::Tensor got = resize_batch(ramp.contiguous(), 24);
  ASSERT_EQ(got.sizes().vec(), (std::vector<int64_t>{1, 3, 24, 24}));
  for (int j : {0, 1, 11, 23}) EXPECT_NEAR(got[0][1][5][j].item<float>(), (j + 0.5) * 4.0 / 3.0 - 0.5, 1e-5) << j;
  // Columns 0, 1, 0, 1, ...: pixel 0 reads 1/6 of the way to column 1, pixel
  // 1 halfway between columns 1 and 2, pixel 2 5/6 of the way to column 3
  // (an antialiasing filter would blur all three towards 1/2).
  const torch::Tensor stripes = (torch::arange(32, torch::kLong) % 2).to(torch::kFloat).view({1, 1, 1, 32});
  const torch::Tensor s = resize_batch(stripes.expand({1, 3, 32, 32}).contiguous(), 24);
  EXPECT_NEAR(s[0][0][0][0].item<float>(), 1.0 / 6.0, 1e-5);
  EXPECT_NEAR(s[0][0][0][1].item<float>(), 0.5, 1e-5);
  EXPECT_NEAR(s[0][0][0][2].item<float>(), 5.0 / 6.0, 1e-5);
  // Kept as it is: no size, or the batch's own; and the layout asked for.
  EXPECT_TRUE(resize_batch(ramp, 0).is_same(ramp));
  EXPECT_TRUE(resize_batch(ramp, 32).is_same(ramp));
  EXPECT_TRUE(
      resize_batch(constant, 28, torch::MemoryFormat::ChannelsLast).is_contiguous(torch::MemoryFormat::ChannelsLast));
}

// The epoch's size from the schedule, resized last: the same draws as
// without a schedule, then the bilinear resize.
TEST(BatchLoader, ResolutionScheduleResizesTheEpochsItLists) {
  const Split s = random_split(16, 9);
  std::vector<int64_t> indices(16);
  for (int64_t i = 0; i < 16; ++i) indices[static_cast<size_t>(i)] = i;
  auto first_batch = [&](const std::string& schedule, int64_t epoch) {
    LoaderOptions o;
    o.augment = true;
    o.jitter = Jitter{0.1, 0.1};
    o.epoch = epoch;
    o.resolution = ResolutionSchedule::parse(schedule);
    BatchLoader loader(s, indices, 16, o);
    return loader.next()->images;
  };
  EXPECT_TRUE(torch::equal(first_batch("24:1,28", 0), resize_batch(first_batch("", 0), 24)));
  EXPECT_TRUE(torch::equal(first_batch("24:1,28", 1), resize_batch(first_batch("", 1), 28)));
  EXPECT_EQ(first_batch("24:1,28", 5).size(3), 28);
}

TEST(BatchLoader, DropLastAndBadIndices) {
  const Split s = random_split(10, 8);
  LoaderOptions o;
  o.drop_last = true;
  BatchLoader loader(s, {0, 1, 2, 3, 4, 5, 6}, 3, o);
  EXPECT_EQ(loader.num_batches(), 2);
  int n = 0;
  while (loader.next()) ++n;
  EXPECT_EQ(n, 2);
  EXPECT_THROW(BatchLoader(s, {0, 10}, 2, o), DataError);
}

TEST(Prefetcher, DeliversInOrderThenRethrowsTheProducersError) {
  int produced = 0;
  Prefetcher<int> p(
      [&]() -> std::optional<int> {
        if (produced == 5) throw std::runtime_error("producer failed");
        return produced++;
      },
      2);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p.next(), i);
  EXPECT_THROW(p.next(), std::runtime_error);
}

TEST(Prefetcher, StopsCleanlyWhenTheConsumerQuitsEarly) {
  std::atomic<int> produced{0};
  {
    Prefetcher<int> p([&]() -> std::optional<int> { return produced++; }, 3);
    EXPECT_EQ(p.next(), 0);
  }                               // destructor joins the producer blocked on a full queue
  EXPECT_LE(produced.load(), 5);  // bounded: 1 consumed + at most 3 queued + 1 in flight
}

}  // namespace
}  // namespace cifar
