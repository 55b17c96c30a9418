// The normalise/augment math of the data path, in two steps with one job each:
//
//   crop_and_flip (uint8 -> uint8, CPU): torchvision RandomCrop(32, padding=4)
//     with zero (or reflected) padding followed by RandomHorizontalFlip(0.5),
//     one draw per sample. A tight row-copy loop, memcpy-bound on uint8, where the
//     equivalent tensor gathers cost far more (dev/bench/loader_bench).
//   resize_batch (float -> float, any device): the whole image resized for
//     --resolution-schedule, after the rest of the augmentation.
//   normalize_batch (uint8 -> float, any device): out = (pixel / 255 - mean[c]) / std[c],
//     as batched tensor ops in torchvision's order (ToTensor, then Normalize),
//     each step rounded to float as there, so the batch is bit-identical to the
//     PyTorch DDP recipe's on CPUs and GPUs alike.
//
// Both the CPU path and the GPU-resident path (splits held on the device)
// use these two functions; the resident path gathers, crops and normalises
// on the device.
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>

#include "config/choices.hpp"
#include "data/hdf5_dataset.hpp"

namespace cifar {

struct Normalization {
  std::array<double, 3> mean{0.5, 0.5, 0.5};  // of pixel/255, per channel
  std::array<double, 3> std{0.5, 0.5, 0.5};
  static Normalization recipe() { return {}; }  // the PyTorch DDP recipe's: ToTensor + Normalize(0.5, 0.5)
  static Normalization from_split(const SplitInfo& info) { return {info.mean, info.std}; }
};

// Per-sample random choices of one batch, drawn from the loader's CPU
// generator so that they do not depend on the device or on thread timing.
struct AugmentDraws {
  torch::Tensor offsets;  // int64 [B,2]: crop origin (y, x) in the padded image, 0..2*pad
  torch::Tensor flips;    // bool [B]: mirror horizontally (after the crop)
  // With a Jitter: float [B,1,1,1] each, drawn after the crops and flips.
  torch::Tensor brightness;  // uniform in [-brightness, brightness], added
  torch::Tensor contrast;    // uniform in [1 - contrast, 1 + contrast], multiplied after
};
// Brightness and contrast jitter of the normalised images (the Hiverge record
// recipe's: 0.1399 and 0.1308); 0 and 0: none, and nothing drawn for it.
struct Jitter {
  double brightness = 0;
  double contrast = 0;
  bool enabled() const { return brightness > 0 || contrast > 0; }
};
AugmentDraws draw_augmentation(int64_t batch_size, int pad, at::Generator& generator, const Jitter& jitter = {});

// float [B,C,H,W] (normalised, any device) -> (images + brightness) * contrast,
// per sample; unchanged when the draws hold no jitter. On a GPU the draws
// reach it by one asynchronous copy (copy_to_device): no host synchronisation.
torch::Tensor apply_jitter(const torch::Tensor& images, const AugmentDraws& draws);

// "Alternating" flips (the speed-record recipes'): sample i is mirrored in even
// epochs when a fixed pseudo-random bit of (seed, i) is set, and in odd
// epochs when it is not, so every image is seen both ways in every two
// epochs. A pure function of the sample indices: the same on every rank
// whatever the sharding. indices: int64 [B] (CPU); returns bool [B].
torch::Tensor alternating_flips(const torch::Tensor& indices, uint64_t seed, int64_t epoch);

// uint8 [B,C,H,W] (CPU) -> uint8 [B,C,H,W]: out[b,c,y,x] = padded[b,c,y+oy, x'+ox]
// with x' = W-1-x when flipped, where padded is the image with `pad` pixels
// around it: zeros, or the image reflected at its edges (as F.pad's 'reflect').
torch::Tensor crop_and_flip(const torch::Tensor& images, const AugmentDraws& draws, int pad,
                            CropPadding padding = CropPadding::Zero);

// The same crop and flip as tensor gathers, for a batch on any device (the
// GPU-resident path). Equal to crop_and_flip for the same draws (a test).
torch::Tensor crop_and_flip_gather(const torch::Tensor& images, const AugmentDraws& draws, int pad,
                                   CropPadding padding = CropPadding::Zero);

// A host tensor on `device` without making the host wait: a plain copy to a
// GPU synchronises the stream (the host waits for every queued kernel, and
// cannot queue the next step meanwhile); through pinned memory it is an
// asynchronous copy ordered on the stream. Unchanged for a CPU device, and
// for a tensor already on `device`.
torch::Tensor copy_to_device(const torch::Tensor& host, torch::Device device);

// uint8 [B,3,H,W] -> float [B,3,H,W] on the same device, laid out in `format`
// (channels_last for the convolutions, so the trainer need not copy the batch).
torch::Tensor normalize_batch(const torch::Tensor& images, const Normalization& normalization,
                              torch::MemoryFormat format = torch::MemoryFormat::Contiguous);

// float [B,C,H,W] -> float [B,C,size,size] in `format`: the whole image
// resized by bilinear interpolation, as the E1 record recipe's
// F.interpolate(mode="bilinear", align_corners=False) does it (no
// antialiasing: the downsampling reads at most 2x2 pixels per output pixel).
// Unchanged when `size` is 0 or already the batch's.
torch::Tensor resize_batch(const torch::Tensor& images, int64_t size,
                           torch::MemoryFormat format = torch::MemoryFormat::Contiguous);

}  // namespace cifar
