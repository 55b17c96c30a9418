// Model: the interface the trainer sees — forward() on [B,3,32,32] float images
// giving [B,10] logits, the state (parameters and buffers) in PyTorch's
// state_dict order, and the memory-format switch. The registry maps a --model
// name to its constructor.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/cifar_schema.hpp"

namespace cifar {

// One named tensor of a model's state: a parameter or a buffer.
using NamedTensor = std::pair<std::string, torch::Tensor>;

class Model : public torch::nn::Module {
 public:
  explicit Model(const std::string& name) : torch::nn::Module(name) {}
  // x: [B,3,32,32] float, contiguous or channels_last. Returns [B,kNumClasses] logits.
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
};

// Parameters and persistent buffers in the order PyTorch's Module.state_dict()
// lists them: each module's own parameters, then its own buffers, then its
// children in registration order. Names are dotted paths ("layer1.0.bn1.weight").
std::vector<NamedTensor> state_entries(const torch::nn::Module& module);

// Stores every 4-d parameter and buffer (the convolution weights) in `format`.
// LibTorch's Module::to() has no memory-format overload, unlike Python's.
void set_memory_format(torch::nn::Module& module, at::MemoryFormat format);

// Names accepted by make_model, in the order --help lists them.
std::vector<std::string> model_names();
// A freshly initialised model drawn from the global torch generator (seed it
// with torch::manual_seed first). Throws ConfigError listing the valid names.
std::shared_ptr<Model> make_model(const std::string& name);

}  // namespace cifar
