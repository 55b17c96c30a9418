// Model: the interface the trainer sees — forward() on [B,3,32,32] float images
// giving [B,10] logits, the state (parameters and buffers) in PyTorch's
// state_dict order, the memory-format switch, and two hooks a model may use:
// its parameter groups (learning-rate and weight-decay multipliers, groups
// trained for the first epochs only) and an initialisation from the training
// data. The registry maps a --model name to its constructor.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "util/cifar10.hpp"

namespace cifar {

// One named tensor of a model's state: a parameter or a buffer.
using NamedTensor = std::pair<std::string, torch::Tensor>;

// Parameters the optimiser treats alike. Parameters that never train
// (requires_grad false) belong to no group.
struct ParameterGroup {
  std::string name;
  std::vector<torch::Tensor> parameters;
  double lr_scale = 1.0;            // times the schedule's learning rate
  double weight_decay_scale = 1.0;  // times --weight-decay
  // Trained in epochs [0, train_epochs) only; -1: always. A fraction (0.19)
  // ends inside an epoch, after ceil(train_epochs x steps per epoch) steps.
  double train_epochs = -1;
  // Its rate falls linearly from the peak learning rate (times lr_scale) to 0
  // over its train_epochs instead of following the schedule.
  bool decays_over_training = false;
  // Set by the optimiser where it matters (Muon: orthogonalised updates).
  bool orthogonalize = false;
};

class Model : public torch::nn::Module {
 public:
  explicit Model(const std::string& name) : torch::nn::Module(name) {}
  // x: [B,3,32,32] float, contiguous or channels_last. Returns [B,kNumClasses] logits.
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;

  // Default: one group of every parameter that requires a gradient.
  virtual std::vector<ParameterGroup> parameter_groups();
  // How many of the training split's first images initialize_from_data()
  // wants; 0 (the default): it is not called.
  virtual int64_t initialization_images() const { return 0; }
  // Called once after construction with that many of the training split's
  // first images, normalised as the batches will be ([N,3,32,32] float, CPU).
  // The result must depend on nothing but these images, so that every rank
  // computes the same weights.
  virtual void initialize_from_data(const torch::Tensor& images) {}
};

// The parameters of `groups`, in order: what the optimiser and the gradient
// reducer work on.
std::vector<torch::Tensor> trainable_parameters(const std::vector<ParameterGroup>& groups);

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

// What rank 0 holds and every rank must hold without training it: buffers
// (BatchNorm statistics) and frozen parameters.
std::vector<torch::Tensor> untrained_state(Model& model);

}  // namespace cifar
