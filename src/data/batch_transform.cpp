// Crop/flip augmentation and normalisation of uint8 batches (see batch_transform.hpp).
#include "data/batch_transform.hpp"

#include <cstring>

#include "util/error.hpp"

namespace cifar {

AugmentDraws draw_augmentation(int64_t batch_size, int pad, at::Generator& generator, const Jitter& jitter) {
  AugmentDraws d;
  d.offsets = torch::randint(0, 2 * pad + 1, {batch_size, 2}, generator, torch::kLong);
  d.flips = torch::randint(0, 2, {batch_size}, generator, torch::kLong).to(torch::kBool);
  if (jitter.enabled()) {  // only then: the stream of a run without jitter stays as it was
    const auto uniform = [&] { return torch::rand({batch_size, 1, 1, 1}, generator, torch::kFloat32) * 2 - 1; };
    d.brightness = uniform() * jitter.brightness;
    d.contrast = uniform() * jitter.contrast + 1;
  }
  return d;
}

torch::Tensor apply_jitter(const torch::Tensor& images, const AugmentDraws& draws) {
  if (!draws.brightness.defined()) return images;
  // Both draws in one asynchronous copy through pinned memory: with the data
  // on a GPU, a plain .to(device) would block the host twice per batch.
  const torch::Tensor both =
      copy_to_device(torch::cat({draws.brightness, draws.contrast}, 1), images.device()).to(images.scalar_type());
  return (images + both.narrow(1, 0, 1)) * both.narrow(1, 1, 1);
}

torch::Tensor alternating_flips(const torch::Tensor& indices, uint64_t seed, int64_t epoch) {
  const torch::Tensor idx = indices.to(torch::kLong).contiguous();
  torch::Tensor flips = torch::empty({idx.numel()}, torch::kBool);
  const int64_t* in = idx.data_ptr<int64_t>();
  bool* out = flips.data_ptr<bool>();
  for (int64_t k = 0; k < idx.numel(); ++k) {
    // splitmix64 of (seed, index): a well-mixed fixed bit per sample.
    uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(in[k]) + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    out[k] = ((z & 1) != 0) != ((epoch & 1) != 0);
  }
  return flips;
}

namespace {
// Position `k` of a padded line of `size` pixels, as an index into the line:
// reflected at the edges (F.pad's 'reflect': -1 -> 1), or -1 (a zero pixel).
int64_t source_index(int64_t k, int64_t size, CropPadding padding) {
  if (k >= 0 && k < size) return k;
  if (padding == CropPadding::Zero) return -1;
  return k < 0 ? -k : 2 * size - 2 - k;
}

// One output row with reflected padding: out[x] = src[reflect(x' + dx)].
void crop_row_reflect(const uint8_t* src, int64_t width, int64_t dx, bool flip, uint8_t* out) {
  for (int64_t x = 0; x < width; ++x)
    out[x] = src[source_index((flip ? width - 1 - x : x) + dx, width, CropPadding::Reflect)];
}

// One output row: source row `src` (nullptr: a padding row), shifted by
// dx = ox - pad columns, mirrored when `flip`.
void crop_row(const uint8_t* src, int64_t width, int64_t dx, bool flip, uint8_t* out) {
  if (!src) {
    std::memset(out, 0, static_cast<size_t>(width));
    return;
  }
  if (!flip) {
    // out[x] = src[x + dx] where 0 <= x + dx < width, else 0.
    const int64_t lo = std::max<int64_t>(0, -dx), hi = std::min(width, width - dx);
    std::memset(out, 0, static_cast<size_t>(lo));
    std::memcpy(out + lo, src + lo + dx, static_cast<size_t>(hi - lo));
    std::memset(out + hi, 0, static_cast<size_t>(width - hi));
    return;
  }
  for (int64_t x = 0; x < width; ++x) {  // out[x] = src[width - 1 - x + dx]
    const int64_t s = width - 1 - x + dx;
    out[x] = (s >= 0 && s < width) ? src[s] : 0;
  }
}
}  // namespace

torch::Tensor crop_and_flip(const torch::Tensor& images, const AugmentDraws& draws, int pad, CropPadding padding) {
  CIFAR_CHECK(images.dim() == 4 && images.scalar_type() == torch::kUInt8 && images.device().is_cpu(), DataError,
              "crop_and_flip expects a uint8 CPU batch [B,C,H,W]");
  const torch::Tensor in = images.contiguous();
  const int64_t b = in.size(0), c = in.size(1), h = in.size(2), w = in.size(3);
  torch::Tensor out = torch::empty_like(in);
  const torch::Tensor offsets = draws.offsets.to(torch::kLong).contiguous();
  const torch::Tensor flips = draws.flips.to(torch::kBool).contiguous();
  const int64_t* off = offsets.data_ptr<int64_t>();
  const bool* flip = flips.data_ptr<bool>();
  const uint8_t* src = in.data_ptr<uint8_t>();
  uint8_t* dst = out.data_ptr<uint8_t>();
  for (int64_t i = 0; i < b; ++i) {
    const int64_t dy = off[2 * i] - pad, dx = off[2 * i + 1] - pad;
    for (int64_t ch = 0; ch < c; ++ch) {
      const uint8_t* plane = src + (i * c + ch) * h * w;
      uint8_t* out_plane = dst + (i * c + ch) * h * w;
      for (int64_t y = 0; y < h; ++y) {
        const int64_t sy = source_index(y + dy, h, padding);
        if (padding == CropPadding::Reflect) {
          crop_row_reflect(plane + sy * w, w, dx, flip[i], out_plane + y * w);
        } else {
          crop_row(sy >= 0 ? plane + sy * w : nullptr, w, dx, flip[i], out_plane + y * w);
        }
      }
    }
  }
  return out;
}

torch::Tensor copy_to_device(const torch::Tensor& host, torch::Device device) {
  if (device.is_cpu() || host.device() == device) return host;  // nothing to copy (GPU-resident data)
  const bool pin = device.is_cuda();
  return (pin ? host.pin_memory() : host).to(device, /*non_blocking=*/pin);
}

namespace {
// Reflected padding as indices into the unpadded line: k -> |k|, and
// k >= size -> 2 size - 2 - k (F.pad's 'reflect').
torch::Tensor reflect_indices(const torch::Tensor& k, int64_t size) {
  return torch::where(k < 0, -k, torch::where(k >= size, 2 * size - 2 - k, k));
}
}  // namespace

torch::Tensor crop_and_flip_gather(const torch::Tensor& images, const AugmentDraws& draws, int pad,
                                   CropPadding padding) {
  CIFAR_CHECK(images.dim() == 4 && images.scalar_type() == torch::kUInt8, DataError,
              "crop_and_flip_gather expects a uint8 batch [B,C,H,W]");
  const auto device = images.device();
  const int64_t b = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  const auto longs = torch::TensorOptions().dtype(torch::kLong).device(device);
  // Reflected padding is index arithmetic on the unpadded image; zero
  // padding gathers from an explicitly padded copy.
  const bool reflect = padding == CropPadding::Reflect;
  const int64_t shift = reflect ? pad : 0;
  const torch::Tensor padded = reflect ? images : torch::constant_pad_nd(images, {pad, pad, pad, pad}, 0);
  // The draws travel as one [B,3] tensor (crop y, crop x, flip): one copy.
  const torch::Tensor draws_here = copy_to_device(
      torch::cat({draws.offsets.to(torch::kLong), draws.flips.to(torch::kLong).view({b, 1})}, 1), device);
  const torch::Tensor offsets = draws_here.narrow(1, 0, 2);
  const torch::Tensor flips = draws_here.select(1, 2).to(torch::kBool).view({b, 1});
  const torch::Tensor across = torch::arange(w, longs).view({1, w});
  torch::Tensor rows = torch::arange(h, longs).view({1, h}) + offsets.select(1, 0).view({b, 1}) - shift;
  torch::Tensor cols = torch::where(flips, (w - 1) - across, across) + offsets.select(1, 1).view({b, 1}) - shift;
  if (reflect) {
    rows = reflect_indices(rows, h);
    cols = reflect_indices(cols, w);
  }
  const int64_t padded_width = padded.size(3);
  const torch::Tensor picked_rows = padded.gather(2, rows.view({b, 1, h, 1}).expand({b, c, h, padded_width}));
  return picked_rows.gather(3, cols.view({b, 1, 1, w}).expand({b, c, h, w}));
}

torch::Tensor normalize_batch(const torch::Tensor& images, const Normalization& n, torch::MemoryFormat format) {
  CIFAR_CHECK(images.dim() == 4 && images.size(1) == 3 && images.scalar_type() == torch::kUInt8, DataError,
              "normalize_batch expects a uint8 batch [B,3,H,W]");
  // torchvision's operations in its order, each rounded to float: ToTensor's
  // x / 255, then Normalize's (x - mean) / std with float32 mean and std.
  // Folding them into one multiply-add (x / 127.5 - 1 for the PyTorch DDP recipe's) is off
  // by one ulp for most pixel values, and Adam amplifies such differences.
  std::array<float, 3> mean{}, std{};
  for (int ch = 0; ch < 3; ++ch) {
    mean[ch] = static_cast<float>(n.mean[ch]);
    std[ch] = static_cast<float>(n.std[ch]);
  }
  const auto opts = torch::TensorOptions().dtype(torch::kFloat).device(images.device());
  // Made where the batch is, by fills: a copy from the host would make the
  // host wait for the device (see copy_to_device).
  const auto per_channel = [&](const std::array<float, 3>& v) {
    return torch::stack(
               {torch::scalar_tensor(v[0], opts), torch::scalar_tensor(v[1], opts), torch::scalar_tensor(v[2], opts)})
        .view({1, 3, 1, 1});
  };
  const torch::Tensor mean_t = per_channel(mean);
  const torch::Tensor std_t = per_channel(std);
  // 255 as a tensor on the batch's device, not a host scalar: CUDA divides by
  // a host scalar as a multiply by its rounded reciprocal, which is not x / 255.
  const torch::Tensor divisor = torch::scalar_tensor(255.0f, opts);
  // In NCHW then one copy into `format`: cheaper than converting the uint8
  // batch first (strided elementwise ops on channels_last are slow).
  return images.to(torch::kFloat).div_(divisor).sub_(mean_t).div_(std_t).contiguous(format);
}

torch::Tensor resize_batch(const torch::Tensor& images, int64_t size, torch::MemoryFormat format) {
  CIFAR_CHECK(images.dim() == 4 && images.is_floating_point(), DataError,
              "resize_batch expects a float batch [B,C,H,W]");
  if (size == 0 || (images.size(2) == size && images.size(3) == size)) return images;
  namespace F = torch::nn::functional;
  const auto options =
      F::InterpolateFuncOptions().size(std::vector<int64_t>{size, size}).mode(torch::kBilinear).align_corners(false);
  return F::interpolate(images, options).contiguous(format);
}

}  // namespace cifar
