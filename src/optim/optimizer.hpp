// The optimiser registry: --optimizer NAME builds a torch optimiser over the
// model's parameter groups from the [optim] section. Adding an optimiser is
// one entry in optimizer.cpp (docs/extending.md).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "model/model.hpp"

namespace cifar {

std::vector<std::string> optimizer_names();
// Whether --nesterov means anything to this optimiser.
bool optimizer_supports_nesterov(const std::string& name);

// The optimiser of a run: one torch parameter group per (non-empty) model
// parameter group, each with its learning-rate and weight-decay multipliers.
// With OptimConfig::fused, the graph-safe Adam/SGD of fused_optimizer.hpp.
// Throws ConfigError listing the valid names for an unknown optimiser.
class GraphSafeStep;
class Communicator;
class Muon;

// Where the run is when a step's rates are set.
struct StepPoint {
  int epoch = 0;
  long step = 0;             // optimiser steps done
  long steps_per_epoch = 0;  // 0: unknown (groups end on whole epochs)
};

class Optimizer {
 public:
  Optimizer(const OptimConfig& config, const std::vector<ParameterGroup>& groups);

  // Every group's rate for the coming step: `lr` (the schedule's) times the
  // group's multiplier, and 0 for a group whose training epochs are over.
  void set_learning_rate(double lr, int epoch) { set_learning_rate(lr, StepPoint{epoch, 0, 0}, lr); }
  // The same, with the step for groups that end inside an epoch or decay
  // over their own training (ParameterGroup), from `peak_lr`.
  void set_learning_rate(double lr, const StepPoint& at, double peak_lr);
  // The run's length in optimiser steps, for optimisers that follow the
  // run's progress (Muon); a no-op for the others.
  void set_total_steps(long total_steps);
  // Data-parallel optimisers (Muon) share their work over `comm`; a no-op for the others.
  void distribute(Communicator& comm);
  // The groups, in the torch optimiser's order (an optimiser may split a model's groups).
  const std::vector<ParameterGroup>& groups() const { return groups_; }
  torch::optim::Optimizer& torch_optimizer() { return *optimizer_; }
  void zero_grad() { optimizer_->zero_grad(); }
  void step() { optimizer_->step(); }

 private:
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::vector<ParameterGroup> groups_;   // the non-empty ones, in the torch optimiser's order
  GraphSafeStep* graph_safe_ = nullptr;  // optimizer_ itself with --fused-optimizer (and Muon)
  Muon* muon_ = nullptr;                 // optimizer_ itself with --optimizer muon
};

// The run's optimiser over `groups`: --optimizer's registry entry with the
// options the run builds it with (built_optimizer_config: --cuda-graphs
// asks for the graph-safe step).
std::unique_ptr<Optimizer> make_optimizer(const RunConfig& config, const std::vector<ParameterGroup>& groups);

}  // namespace cifar
