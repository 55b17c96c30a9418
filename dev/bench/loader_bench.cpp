// loader_bench: images/s of the BatchLoader on this machine -- normalised and
// augmented batches of 256, one intra-op thread (the goal is >= 20,000 images/s
// on one core). Data: --data FILE.h5 (train split) or synthetic in memory.
//   OMP_NUM_THREADS=1 build/cpu/loader_bench [--data FILE.h5] [--epochs 2]
// Prints one line per configuration: "<config>: <images/s> images/s (<ms>/batch)".
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "data/batch_loader.hpp"
#include "data/distributed_sampler.hpp"
#include "data/hdf5_dataset.hpp"
#include "pack/synthetic.hpp"
#include "util/error.hpp"

using namespace cifar;

namespace {

Split synthetic_split(int64_t n) {
  CifarData data = make_synthetic_cifar(n, 1, 7);
  Split s;
  s.name = "train";
  s.images = torch::from_blob(data.train.images.data(), {n, 3, 32, 32}, torch::kUInt8).clone();
  s.labels = torch::from_blob(data.train.labels.data(), {n}, torch::kUInt8).to(torch::kLong);
  return s;
}

void bench(const char* name, const Split& split, LoaderOptions options, int epochs) {
  int64_t images = 0, batches = 0;
  double checksum = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < epochs; ++epoch) {
    options.epoch = epoch;
    BatchLoader loader(split, distributed_sampler_indices({split.size(), 1, 0, 0, epoch, true, false}), 256, options);
    while (auto batch = loader.next()) {
      images += batch->images.size(0);
      ++batches;
      checksum += batch->images[0][0][0][0].item<float>();  // touch the result
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-44s %9.0f images/s  (%.2f ms/batch, %lld batches, check %.3f)\n", name, images / s,
              1000.0 * s / static_cast<double>(batches), static_cast<long long>(batches), checksum);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string data;
    int epochs = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
      if (!std::strcmp(argv[i], "--data")) data = argv[i + 1];
      else if (!std::strcmp(argv[i], "--epochs")) epochs = std::stoi(argv[i + 1]);
      else throw ConfigError(std::string("loader_bench: unknown option ") + argv[i]);
    }
    at::set_num_threads(1);
    const Split split = data.empty() ? synthetic_split(50000) : read_split(data, "train");
    std::printf("loader_bench: %lld images (%s), batch 256, intra-op threads %d\n",
                static_cast<long long>(split.size()), data.empty() ? "synthetic" : data.c_str(), at::get_num_threads());
    LoaderOptions plain;
    LoaderOptions augmented;
    augmented.augment = true;
    LoaderOptions inline_aug = augmented;
    inline_aug.prefetch_depth = 0;
    bench("normalise only, prefetch thread", split, plain, epochs);
    bench("normalise + crop/flip, prefetch thread", split, augmented, epochs);
    bench("normalise + crop/flip, no thread (1 core)", split, inline_aug, epochs);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "loader_bench: error: %s\n", e.what());
    return e.exit_code();
  }
}
