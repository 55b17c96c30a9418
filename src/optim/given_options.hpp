// The options each parameter group was given, kept by every optimiser.
//
// LibTorch 2.15's Optimizer constructor (add_param_group) merges a group's
// options with the optimiser's defaults: a value equal to what its options
// type's constructor sets (lr 1e-3, weight decay 0, ...) is replaced by the
// defaults' value, and the options of a type it does not know (MuonOptions)
// are replaced by the defaults whole. The groups built here carry complete
// options, so each optimiser puts them back right after its base constructor;
// with an earlier LibTorch, which keeps them as given, that changes nothing.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace cifar {

inline void keep_given_options(torch::optim::Optimizer& optimizer,
                               const std::vector<torch::optim::OptimizerParamGroup>& given) {
  auto& groups = optimizer.param_groups();
  TORCH_CHECK(groups.size() == given.size(), "keep_given_options: ", groups.size(), " groups for ", given.size(),
              " given");
  for (size_t i = 0; i < given.size(); ++i)
    if (given[i].has_options()) groups[i].set_options(given[i].options().clone());
}

}  // namespace cifar
