// The optimiser registry: each name builds its optimiser with the [optim]
// options and one group per model parameter group (with its multipliers), the
// schedule's rate reaches every group, a group stops after its training
// epochs, and unknown names are refused with the valid ones.
#include <gtest/gtest.h>

#include "optim/muon.hpp"
#include "optim/optimizer.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

std::vector<ParameterGroup> two_groups() {
  ParameterGroup biases{"biases", {torch::zeros({3}, torch::requires_grad())}, 64.0, 1.0 / 64, -1};
  ParameterGroup early{"early", {torch::zeros({2}, torch::requires_grad())}, 1.0, 1.0, 3};
  ParameterGroup none{"empty", {}, 1.0, 1.0, -1};
  return {biases, none, early};
}

// A group's options as given, whatever their values: LibTorch 2.15's
// Optimizer constructor replaces a value equal to its options type's
// constructor default (lr 1e-3, weight decay 0) by the optimiser's default,
// and a custom options type (Muon's) by the defaults whole.
TEST(Optimizer, GroupsKeepTheirOptionsWhereTheyEqualLibTorchDefaults) {
  ParameterGroup tenth{"tenth", {torch::zeros({3}, torch::requires_grad())}, 0.1, 0.0, -1};
  ParameterGroup whole{"whole", {torch::zeros({2}, torch::requires_grad())}, 1.0, 1.0, -1};
  for (const bool fused : {false, true}) {
    for (const char* name : {"adam", "sgd"}) {
      OptimConfig c;
      c.optimizer = name;
      c.lr = 0.01;  // the tenth group's 1e-3 is LibTorch's default rate
      c.weight_decay = 0.05;
      c.fused = fused;
      Optimizer o(c, {tenth, whole});
      auto& groups = o.torch_optimizer().param_groups();
      ASSERT_EQ(groups.size(), 2u);
      EXPECT_DOUBLE_EQ(groups[0].options().get_lr(), 1e-3) << name << (fused ? " fused" : "");
      EXPECT_DOUBLE_EQ(groups[1].options().get_lr(), 0.01) << name << (fused ? " fused" : "");
    }
  }
  OptimConfig c;
  c.optimizer = "muon";
  c.lr = 0.01;
  c.muon_lr = 0.05;
  c.muon_momentum = 0.6;
  ParameterGroup filters{"filters", {torch::zeros({4, 2, 3, 3}, torch::requires_grad())}, 1.0, 1.0, -1};
  Optimizer muon(c, {filters});
  auto& groups = muon.torch_optimizer().param_groups();
  ASSERT_EQ(groups.size(), 1u) << "the filters' group only: the rest is empty";
  const auto& o = static_cast<const MuonOptions&>(groups[0].options());
  EXPECT_TRUE(o.orthogonalize());
  EXPECT_DOUBLE_EQ(o.lr(), 0.05);
  EXPECT_DOUBLE_EQ(o.momentum(), 0.6);
}

TEST(Optimizer, SgdGroupsCarryTheirMultipliers) {
  OptimConfig c;
  c.optimizer = "sgd";
  c.lr = 0.5;
  c.momentum = 0.8;
  c.nesterov = true;
  c.weight_decay = 0.01;
  Optimizer sgd(c, two_groups());
  auto& groups = sgd.torch_optimizer().param_groups();
  ASSERT_EQ(groups.size(), 2u) << "the empty group is left out";
  const auto& biases = static_cast<const torch::optim::SGDOptions&>(groups[0].options());
  EXPECT_DOUBLE_EQ(biases.lr(), 32.0);
  EXPECT_DOUBLE_EQ(biases.weight_decay(), 0.01 / 64);
  EXPECT_DOUBLE_EQ(biases.momentum(), 0.8);
  EXPECT_TRUE(biases.nesterov());
  sgd.set_learning_rate(0.25, 2);
  EXPECT_DOUBLE_EQ(groups[0].options().get_lr(), 16.0);
  EXPECT_DOUBLE_EQ(groups[1].options().get_lr(), 0.25);
  sgd.set_learning_rate(0.25, 3);  // the second group trains for epochs 0, 1 and 2 only
  EXPECT_DOUBLE_EQ(groups[0].options().get_lr(), 16.0);
  EXPECT_DOUBLE_EQ(groups[1].options().get_lr(), 0.0);
}

TEST(Optimizer, AdamOverOneGroupIsTheRecipes) {
  OptimConfig c;
  c.weight_decay = 0.01;
  ParameterGroup all{"all", {torch::zeros({3}, torch::requires_grad())}, 1.0, 1.0, -1};
  Optimizer adam(c, {all});
  EXPECT_NE(dynamic_cast<torch::optim::Adam*>(&adam.torch_optimizer()), nullptr);
  const auto& options =
      static_cast<const torch::optim::AdamOptions&>(adam.torch_optimizer().param_groups()[0].options());
  EXPECT_DOUBLE_EQ(options.lr(), 1e-3);
  EXPECT_DOUBLE_EQ(options.weight_decay(), 0.01);
  EXPECT_TRUE(optimizer_supports_nesterov("sgd"));
  EXPECT_FALSE(optimizer_supports_nesterov("adam"));
}

TEST(Optimizer, UnknownNameListsTheValidOnes) {
  OptimConfig c;
  c.optimizer = "lamb";
  try {
    Optimizer(c, {ParameterGroup{"all", {torch::zeros({1}, torch::requires_grad())}}});
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("adam, sgd"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cifar
