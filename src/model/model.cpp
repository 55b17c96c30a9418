// The model registry and the state walk shared by every model.
#include "model/model.hpp"

#include <functional>

#include "model/convnet.hpp"
#include "model/resnet.hpp"
#include "model/speed94.hpp"
#include "util/registry.hpp"

namespace cifar {
namespace {

struct RegistryEntry {
  const char* name;
  std::function<std::shared_ptr<Model>()> make;
};

const std::vector<RegistryEntry>& registry() {
  static const std::vector<RegistryEntry> entries = {
      {"convnet", [] { return std::make_shared<ConvNet>(); }},
      {"resnet18", [] { return std::make_shared<ResNet18>(); }},
      {"speed94", [] { return std::make_shared<Speed94>(); }},
      {"speed94_muon", [] { return std::make_shared<Speed94>(Speed94Options::hiverge()); }},
  };
  return entries;
}

void append_state(const torch::nn::Module& module, const std::string& prefix, std::vector<NamedTensor>& out) {
  for (const auto& p : module.named_parameters(/*recurse=*/false)) out.emplace_back(prefix + p.key(), p.value());
  for (const auto& b : module.named_buffers(/*recurse=*/false)) out.emplace_back(prefix + b.key(), b.value());
  for (const auto& child : module.named_children()) append_state(*child.value(), prefix + child.key() + ".", out);
}

}  // namespace

std::vector<NamedTensor> state_entries(const torch::nn::Module& module) {
  std::vector<NamedTensor> out;
  append_state(module, "", out);
  return out;
}

void set_memory_format(torch::nn::Module& module, at::MemoryFormat format) {
  torch::NoGradGuard no_grad;
  for (auto& entry : state_entries(module)) {
    torch::Tensor& t = entry.second;
    if (t.dim() == 4) t.set_data(t.contiguous(format));
  }
}

std::vector<ParameterGroup> Model::parameter_groups() {
  ParameterGroup all;
  all.name = "all";
  for (const auto& p : parameters())
    if (p.requires_grad()) all.parameters.push_back(p);
  return {all};
}

std::vector<torch::Tensor> trainable_parameters(const std::vector<ParameterGroup>& groups) {
  std::vector<torch::Tensor> out;
  for (const auto& g : groups) out.insert(out.end(), g.parameters.begin(), g.parameters.end());
  return out;
}

std::vector<std::string> model_names() { return registered_names(registry()); }

std::shared_ptr<Model> make_model(const std::string& name) { return find_registered(registry(), name, "model").make(); }

std::vector<torch::Tensor> untrained_state(Model& model) {
  std::vector<torch::Tensor> state = model.buffers();
  for (const auto& p : model.parameters())
    if (!p.requires_grad()) state.push_back(p);
  return state;
}

}  // namespace cifar
