// layer_bench: where a convnet training step's milliseconds go, layer by layer,
// with the kernels cifar_mpi runs (LibTorch's oneDNN convolutions in
// channels_last, the fused pool+relu, OpenBLAS GEMMs, Adam). Each stage is
// timed alone on its real input shape, forward and backward, and the two
// pooling stages also through LibTorch's own max_pool2d + relu for comparison.
//   build/cpu/layer_bench [--batch 256] [--threads 1] [--iters 10] [--channels-last true]
// Prints one row per stage: ms forward, ms backward, share of the step, GFLOP/s.
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "model/pool_relu.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Stage {
  std::string name;
  std::function<torch::Tensor(const torch::Tensor&)> run;
  double gflop_forward = 0;   // per batch
  double gflop_backward = 0;  // per batch (weights, and the input where it needs a gradient)
  bool counted = true;        // part of the step (false: a comparison row)
};

// Best of three blocks of `iters` calls, in milliseconds per call.
double best_ms(const std::function<void()>& f, int iters) {
  for (int i = 0; i < 2; ++i) f();  // warm caches and allocators
  double best = 1e30;
  for (int block = 0; block < 3; ++block) {
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) f();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / iters);
  }
  return best;
}

double conv_gflop(int64_t batch, int64_t out_hw, int64_t cin, int64_t cout) {
  return 2.0 * batch * out_hw * out_hw * cout * cin * 9 / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 256;
  int threads = 1, iters = 10;
  bool channels_last = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--batch") batch = std::stoll(value);
    else if (key == "--threads") threads = std::stoi(value);
    else if (key == "--iters") iters = std::stoi(value);
    else if (key == "--channels-last") channels_last = value == "true";
    else {
      std::fprintf(stderr, "usage: layer_bench [--batch N] [--threads N] [--iters N] [--channels-last true|false]\n");
      return 2;
    }
  }
  at::set_num_threads(threads);
  torch::manual_seed(0);
  const auto format = channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
  // The program's own ConvNet, laid out as the trainer lays it out; its layers
  // are timed one by one through their registered names.
  const auto model = cifar::make_model("convnet");
  cifar::set_memory_format(*model, format);
  const auto layers = model->named_children();
  const auto conv1 = layers["conv1"]->as<torch::nn::Conv2d>(), conv2 = layers["conv2"]->as<torch::nn::Conv2d>();
  const auto fc1 = layers["fc1"]->as<torch::nn::Linear>(), fc2 = layers["fc2"]->as<torch::nn::Linear>();
  const auto labels = torch::randint(0, 10, {batch});
  const auto libtorch_pool_relu = [](const torch::Tensor& x) { return torch::relu(torch::max_pool2d(x, 2)); };

  const std::vector<Stage> stages = {
      {"conv1 3->32 (weight grad only)", [&](const torch::Tensor& x) { return conv1->forward(x); },
       conv_gflop(batch, 30, 3, 32), conv_gflop(batch, 30, 3, 32)},
      {"pool+relu 32x30x30 (fused)", cifar::max_pool2x2_relu, 0, 0},
      {"  same, LibTorch max_pool2d+relu", libtorch_pool_relu, 0, 0, false},
      {"conv2 32->64", [&](const torch::Tensor& x) { return conv2->forward(x); }, conv_gflop(batch, 13, 32, 64),
       2 * conv_gflop(batch, 13, 32, 64)},
      {"pool+relu 64x13x13 (fused)", cifar::max_pool2x2_relu, 0, 0},
      {"  same, LibTorch max_pool2d+relu", libtorch_pool_relu, 0, 0, false},
      {"fc1 2304->128 + relu", [&](const torch::Tensor& x) { return torch::relu(fc1->forward(x.flatten(1))); },
       2.0 * batch * 2304 * 128 / 1e9, 4.0 * batch * 2304 * 128 / 1e9},
      {"fc2 + cross-entropy",
       [&](const torch::Tensor& x) { return torch::nn::functional::cross_entropy(fc2->forward(x), labels); },
       2.0 * batch * 128 * 10 / 1e9, 4.0 * batch * 128 * 10 / 1e9},
  };

  struct Row {
    std::string name;
    double forward, backward, gflop;
    bool counted;
  };
  std::vector<Row> rows;
  // A comparison row reuses the input of the stage before it.
  torch::Tensor input = torch::randn({batch, 3, 32, 32}).contiguous(format), next_input;
  for (size_t s = 0; s < stages.size(); ++s) {
    const Stage& stage = stages[s];
    if (stage.counted && next_input.defined()) {
      // The first layer's input needs no gradient, as in training.
      input = next_input.detach().clone(torch::MemoryFormat::Preserve).requires_grad_(true);
    }
    const auto output = stage.run(input);
    const auto grad = torch::randn_like(output);
    const double forward = best_ms([&] { stage.run(input); }, iters);
    const double both = best_ms(
        [&] {
          stage.run(input).backward(grad);
          input.mutable_grad() = torch::Tensor();  // as in training: no accumulation into an old input gradient
        },
        iters);
    rows.push_back({stage.name, forward, std::max(0.0, both - forward), stage.gflop_forward + stage.gflop_backward,
                    stage.counted});
    if (stage.counted) next_input = output;
  }
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  rows.push_back({"Adam step", best_ms([&] { adam.step(); }, iters), 0, 0, true});

  double step = 0;
  for (const auto& r : rows) step += r.counted ? r.forward + r.backward : 0;
  std::printf("# layer_bench: convnet, batch %lld, %d thread(s), %s\n", static_cast<long long>(batch), threads,
              channels_last ? "channels_last" : "NCHW");
  std::printf("%-34s %9s %9s %8s %8s\n", "stage", "fwd ms", "bwd ms", "share", "GFLOP/s");
  for (const auto& r : rows) {
    const double ms = r.forward + r.backward;
    std::printf("%-34s %9.2f %9.2f %7.1f%% ", r.name.c_str(), r.forward, r.backward,
                r.counted ? 100.0 * ms / step : 0.0);
    if (r.gflop > 0) std::printf("%8.1f\n", r.gflop / (ms / 1e3));
    else std::printf("%8s\n", "-");
  }
  std::printf("%-34s %19.2f ms = %.0f images/s per thread-set (kernels only)\n", "step", step,
              static_cast<double>(batch) / (step / 1e3));
  return 0;
}
