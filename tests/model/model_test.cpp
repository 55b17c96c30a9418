// Models: parameter names, shapes and counts against the Python definitions,
// output shapes, channels_last equivalence, seeding and the registry's errors.
#include <gtest/gtest.h>

#include <set>

#include <cmath>

#include "model/model.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

std::shared_ptr<Model> seeded(const std::string& name, uint64_t seed = 0) {
  torch::manual_seed(seed);
  return make_model(name);
}

int64_t parameter_count(const Model& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

std::vector<std::string> names_of(const std::vector<NamedTensor>& entries) {
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.first);
  return names;
}

TEST(ConvNet, StateMatchesTheRecipeClass) {
  const auto m = seeded("convnet");
  const auto state = state_entries(*m);
  const std::vector<std::string> names = {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                          "fc1.weight",   "fc1.bias",   "fc2.weight",   "fc2.bias"};
  EXPECT_EQ(names_of(state), names);
  const std::vector<std::vector<int64_t>> shapes = {{32, 3, 3, 3}, {32},  {64, 32, 3, 3}, {64},
                                                    {128, 2304},   {128}, {10, 128},      {10}};
  for (size_t i = 0; i < state.size(); ++i) EXPECT_EQ(state[i].second.sizes().vec(), shapes[i]) << names[i];
  // sum(p.numel() for p in ConvNet().parameters()) in Python
  EXPECT_EQ(parameter_count(*m), 896 + 18496 + 295040 + 1290);  // 315,722
  EXPECT_TRUE(m->buffers().empty());
}

// PyTorch's default Conv2d/Linear initialisation: weights Kaiming-uniform with
// a = sqrt(5), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)), biases the same bound.
// (The Python interop test checks the exact values for a seed.)
TEST(ConvNet, DefaultInitialisationBounds) {
  const auto m = seeded("convnet");
  const std::vector<std::pair<std::string, double>> fan_in = {
      {"conv1", 27.0}, {"conv2", 288.0}, {"fc1", 2304.0}, {"fc2", 128.0}};
  const auto params = m->named_parameters();
  for (const auto& [layer, fan] : fan_in) {
    const double bound = 1.0 / std::sqrt(fan);
    for (const char* part : {".weight", ".bias"}) {
      const auto& t = params[layer + part];
      EXPECT_LE(t.abs().max().item<double>(), bound) << layer << part;
      // Uniform on [-b, b]: the largest of many draws comes close to b.
      EXPECT_GT(t.abs().max().item<double>(), 0.7 * bound) << layer << part;
    }
  }
}

TEST(ResNet18, StateMatchesTorchvisionNaming) {
  const auto m = seeded("resnet18");
  const auto names = names_of(state_entries(*m));
  // state_dict() of the Python CIFAR ResNet-18 in tests/model/python_interop.py
  ASSERT_EQ(names.size(), 122u);
  const std::vector<std::string> head = {"conv1.weight",          "bn1.weight",         "bn1.bias",
                                         "bn1.running_mean",      "bn1.running_var",    "bn1.num_batches_tracked",
                                         "layer1.0.conv1.weight", "layer1.0.bn1.weight"};
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + head.size()), head);
  EXPECT_EQ(names.back(), "fc.bias");
  EXPECT_EQ(names[names.size() - 2], "fc.weight");
  const auto params = m->named_parameters();
  EXPECT_EQ(params["layer2.0.downsample.0.weight"].sizes().vec(), (std::vector<int64_t>{128, 64, 1, 1}));
  EXPECT_EQ(params["layer4.1.conv2.weight"].sizes().vec(), (std::vector<int64_t>{512, 512, 3, 3}));
  EXPECT_EQ(params.find("layer1.0.downsample.0.weight"), nullptr);  // shapes match: identity shortcut
  EXPECT_EQ(params.find("conv1.bias"), nullptr);                    // convolutions before BN have no bias
  EXPECT_EQ(parameter_count(*m), 11173962);
  EXPECT_EQ(m->named_buffers()["layer3.0.downsample.1.num_batches_tracked"].scalar_type(), torch::kLong);
}

TEST(ResNet18, TorchvisionInitialisation) {
  const auto m = seeded("resnet18");
  const auto params = m->named_parameters();
  // Kaiming normal, fan_out, ReLU gain: std = sqrt(2 / (out_channels * 3 * 3)).
  const auto w = params["layer3.1.conv1.weight"];
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / (256 * 9)), 0.02 * std::sqrt(2.0 / (256 * 9)));
  EXPECT_TRUE(torch::equal(params["layer2.1.bn2.weight"], torch::ones({128})));
  EXPECT_TRUE(torch::equal(params["layer2.1.bn2.bias"], torch::zeros({128})));
}

class EachModel : public ::testing::TestWithParam<std::string> {};

TEST_P(EachModel, LogitsShape) {
  const auto m = seeded(GetParam());
  for (int64_t batch : {1, 5}) {
    const auto y = m->forward(torch::randn({batch, 3, 32, 32}));
    EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{batch, cifar10::kNumClasses}));
    EXPECT_EQ(y.scalar_type(), torch::kFloat);
  }
}

TEST_P(EachModel, SameSeedSameWeights) {
  const auto a = state_entries(*seeded(GetParam(), 3));
  const auto b = state_entries(*seeded(GetParam(), 3));
  const auto c = state_entries(*seeded(GetParam(), 4));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << a[i].first;
  EXPECT_FALSE(torch::equal(a[0].second, c[0].second));
}

// channels_last input, with and without channels_last weights, gives the
// contiguous result (in training mode too, where batch norm uses batch stats).
TEST_P(EachModel, ChannelsLastGivesTheSameLogits) {
  const auto m = seeded(GetParam());
  torch::manual_seed(11);
  const auto x = torch::randn({4, 3, 32, 32});
  const auto cl = x.contiguous(torch::MemoryFormat::ChannelsLast);
  ASSERT_FALSE(cl.is_contiguous());
  for (bool training : {false, true}) {
    m->train(training);
    torch::NoGradGuard no_grad;
    set_memory_format(*m, torch::MemoryFormat::Contiguous);
    const auto reference = m->forward(x);
    const auto mixed = m->forward(cl);
    set_memory_format(*m, torch::MemoryFormat::ChannelsLast);
    for (const auto& p : m->named_parameters())
      if (p.value().dim() == 4) {
        EXPECT_TRUE(p.value().is_contiguous(torch::MemoryFormat::ChannelsLast)) << p.key();
      }
    const auto both = m->forward(cl);
    EXPECT_TRUE(torch::allclose(reference, mixed, 1e-5, 1e-5)) << "training=" << training;
    EXPECT_TRUE(torch::allclose(reference, both, 1e-5, 1e-5)) << "training=" << training;
  }
}

TEST_P(EachModel, TrainsOneStep) {
  // Gradients reach every trained parameter: the backward graph is wired through all layers.
  const auto m = seeded(GetParam());
  m->train();
  const auto loss = torch::cross_entropy_loss(m->forward(torch::randn({4, 3, 32, 32})), torch::tensor({0, 1, 2, 3}));
  loss.backward();
  for (const auto& p : m->named_parameters()) {
    if (!p.value().requires_grad()) continue;  // frozen by design (speed94's whitening and BatchNorm weights)
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, EachModel, ::testing::ValuesIn(model_names()),
                         [](const auto& info) { return info.param; });

// The recipe's network first (the default), each name once.
TEST(Registry, ListsTheModelsOnce) {
  const auto names = model_names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "convnet");
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
}

TEST(Registry, UnknownNameListsTheValidOnes) {
  try {
    make_model("vgg16");
    FAIL() << "no error for an unknown model";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'vgg16'"), std::string::npos) << m;
    EXPECT_NE(m.find("convnet, resnet18"), std::string::npos) << m;
    EXPECT_EQ(e.exit_code(), kExitUsage);
  }
}

}  // namespace
}  // namespace cifar
