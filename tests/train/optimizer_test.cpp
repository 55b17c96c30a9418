// The optimiser registry: each name builds its optimiser with the [optim]
// options, the learning rate can be set for every group, unknown names are
// refused with the valid ones.
#include <gtest/gtest.h>

#include "train/optimizer.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

TEST(Optimizer, RegistryBuildsEachWithItsOptions) {
  std::vector<torch::Tensor> params{torch::zeros({3}, torch::requires_grad())};
  OptimConfig c;
  c.optimizer = "sgd";
  c.lr = 0.5;
  c.momentum = 0.8;
  c.nesterov = true;
  auto sgd = make_optimizer(c, params);
  const auto& sgd_options = static_cast<const torch::optim::SGDOptions&>(sgd->param_groups()[0].options());
  EXPECT_DOUBLE_EQ(sgd_options.lr(), 0.5);
  EXPECT_DOUBLE_EQ(sgd_options.momentum(), 0.8);
  EXPECT_TRUE(sgd_options.nesterov());
  c.optimizer = "adam";
  c.weight_decay = 0.01;
  auto adam = make_optimizer(c, params);
  EXPECT_NE(dynamic_cast<torch::optim::Adam*>(adam.get()), nullptr);
  set_learning_rate(*adam, 0.125);
  EXPECT_DOUBLE_EQ(adam->param_groups()[0].options().get_lr(), 0.125);
  EXPECT_TRUE(optimizer_supports_nesterov("sgd"));
  EXPECT_FALSE(optimizer_supports_nesterov("adam"));
}

TEST(Optimizer, UnknownNameListsTheValidOnes) {
  OptimConfig c;
  c.optimizer = "lamb";
  try {
    make_optimizer(c, {torch::zeros({1}, torch::requires_grad())});
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("adam, sgd"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cifar
