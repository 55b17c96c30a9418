// The optimiser registry: --optimizer NAME builds a torch optimiser over the
// model's parameters from the [optim] section. Adding an optimiser is one
// entry in optimizer.cpp (docs/extending.md).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "config/train_config.hpp"

namespace cifar {

std::vector<std::string> optimizer_names();
// Whether --nesterov means anything to this optimiser.
bool optimizer_supports_nesterov(const std::string& name);
// Throws ConfigError listing the valid names for an unknown one.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimConfig& config,
                                                        const std::vector<torch::Tensor>& parameters);
// Sets every parameter group's learning rate (the schedule's value for a step).
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);
// The learning rate the optimiser steps with now (its first group's).
double learning_rate_of(const torch::optim::Optimizer& optimizer);

}  // namespace cifar
