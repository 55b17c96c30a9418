// Helper of python_interop.py: the C++ side of the C++ <-> Python model checks.
//   model_interop export NAME SEED MODEL.pth IO.pt
//     seeds the generator, builds NAME, runs two training-mode batches (so
//     batch-norm buffers are not their initial values), then writes the state
//     dict and {"input": x, "logits": eval-mode logits of x}.
//   model_interop check NAME MODEL.pth IO.pt
//     loads a state dict written by Python's torch.save into NAME and checks
//     its logits for IO's input against IO's logits (max |diff| <= 1e-5).
#include <torch/csrc/jit/serialization/pickle.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>

#include "model/model.hpp"
#include "outputs/model_file.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

constexpr double kTolerance = 1e-5;

int export_model(const std::string& name, uint64_t seed, const std::string& model_path, const std::string& io_path) {
  torch::manual_seed(seed);
  auto model = make_model(name);
  model->train();
  {
    torch::NoGradGuard no_grad;
    for (int i = 0; i < 2; ++i) model->forward(torch::randn({8, 3, 32, 32}) * 0.5 + 0.1);
  }
  model->eval();
  const auto x = torch::randn({8, 3, 32, 32});
  torch::Tensor logits;
  {
    torch::NoGradGuard no_grad;
    logits = model->forward(x);
  }
  save_state_dict(*model, model_path);
  c10::Dict<std::string, at::Tensor> io;
  io.insert("input", x);
  io.insert("logits", logits);
  write_file_atomically(io_path, torch::pickle_save(io));
  std::cout << "exported " << name << " (seed " << seed << ") to " << model_path << "\n";
  return 0;
}

int check_model(const std::string& name, const std::string& model_path, const std::string& io_path) {
  auto model = make_model(name);
  load_state_dict(*model, model_path);
  model->eval();
  std::ifstream in(io_path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto io = torch::pickle_load(bytes).toGenericDict();
  const auto x = io.at("input").toTensor();
  const auto expected = io.at("logits").toTensor();
  torch::NoGradGuard no_grad;
  const double diff = (model->forward(x) - expected).abs().max().item<double>();
  std::printf("C++ %s with Python's weights: max |logit diff| = %.3g (tolerance %.0e)\n", name.c_str(), diff,
              kTolerance);
  return diff <= kTolerance ? 0 : 1;
}

}  // namespace
}  // namespace cifar

int main(int argc, char** argv) {
  const std::string usage =
      "usage: model_interop export NAME SEED MODEL.pth IO.pt | model_interop check NAME MODEL.pth IO.pt\n";
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "export" && argc == 6) return cifar::export_model(argv[2], std::stoull(argv[3]), argv[4], argv[5]);
    if (mode == "check" && argc == 5) return cifar::check_model(argv[2], argv[3], argv[4]);
    std::cerr << usage;
    return cifar::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "model_interop: " << e.what() << "\n";
    return cifar::kExitFailure;
  }
}
