// The optimiser registry (see optimizer.hpp).
#include "optim/optimizer.hpp"

#include <cmath>

#include "optim/fused_optimizer.hpp"
#include "optim/given_options.hpp"
#include "optim/muon.hpp"
#include "util/registry.hpp"

namespace cifar {
namespace {

using Groups = std::vector<torch::optim::OptimizerParamGroup>;

// One torch group per model group, with the group's own options.
template <typename Options>
Groups torch_groups(const std::vector<ParameterGroup>& groups, const Options& base, double lr, double weight_decay) {
  Groups out;
  for (const auto& g : groups) {
    auto options = std::make_unique<Options>(base);
    options->lr(lr * g.lr_scale).weight_decay(weight_decay * g.weight_decay_scale);
    out.emplace_back(g.parameters, std::move(options));
  }
  return out;
}

// A torch optimiser of type Opt over `groups`, each group keeping the
// options it was given (optim/given_options.hpp: LibTorch 2.15 would merge
// them with `defaults`).
template <typename Opt, typename Options>
std::unique_ptr<torch::optim::Optimizer> build(const Groups& groups, const Options& defaults) {
  auto optimizer = std::make_unique<Opt>(groups, defaults);
  keep_given_options(*optimizer, groups);
  return optimizer;
}

// --fused-optimizer: the graph-safe subclass (fused_optimizer.hpp), same options and state.
std::unique_ptr<torch::optim::Optimizer> make_adam(const OptimConfig& c, const std::vector<ParameterGroup>& groups) {
  const torch::optim::AdamOptions base(c.lr);
  auto param_groups = torch_groups(groups, base, c.lr, c.weight_decay);
  if (c.fused) return std::make_unique<GraphSafeAdam>(std::move(param_groups), base);
  return build<torch::optim::Adam>(param_groups, base);
}

std::unique_ptr<torch::optim::Optimizer> make_sgd(const OptimConfig& c, const std::vector<ParameterGroup>& groups) {
  const auto base = torch::optim::SGDOptions(c.lr).momentum(c.momentum).nesterov(c.nesterov);
  auto param_groups = torch_groups(groups, base, c.lr, c.weight_decay);
  if (c.fused) return std::make_unique<GraphSafeSGD>(std::move(param_groups), base);
  return build<torch::optim::SGD>(param_groups, base);
}

// --optimizer muon: Muon for the filters (and with --muon-matrices the
// weight matrices), Nesterov SGD with --lr/--momentum/--weight-decay and each
// group's multipliers for the rest.
std::unique_ptr<torch::optim::Optimizer> make_muon(const OptimConfig& c, const std::vector<ParameterGroup>& groups) {
  Groups out;
  for (const auto& g : groups) {
    auto options = std::make_unique<MuonOptions>(c.lr * g.lr_scale);
    options->nesterov(c.nesterov).orthogonalize(g.orthogonalize);
    if (g.orthogonalize) {
      options->momentum(c.muon_momentum).weight_decay(c.muon_weight_decay);
    } else {
      options->momentum(c.momentum).weight_decay(c.weight_decay * g.weight_decay_scale);
    }
    out.emplace_back(g.parameters, std::move(options));
  }
  return std::make_unique<Muon>(std::move(out), MuonOptions(c.lr).nesterov(c.nesterov));
}

bool orthogonalizable(const torch::Tensor& p, const OptimConfig& c) {
  return p.dim() == 4 || (c.muon_matrices && p.dim() >= 2);
}

// Each group's Muon parameters become a group of their own after it: the
// schedule's rate times --muon-lr / --lr, the group's training epochs.
std::vector<ParameterGroup> split_for_muon(const OptimConfig& c, const std::vector<ParameterGroup>& groups) {
  std::vector<ParameterGroup> out;
  for (const auto& g : groups) {
    ParameterGroup rest = g, muon = g;
    rest.parameters.clear();
    muon.parameters.clear();
    for (const auto& p : g.parameters) (orthogonalizable(p, c) ? muon : rest).parameters.push_back(p);
    muon.name += " (muon)";
    muon.lr_scale = c.muon_lr / c.lr;
    muon.weight_decay_scale = 1.0;
    muon.orthogonalize = true;
    out.push_back(std::move(rest));
    out.push_back(std::move(muon));
  }
  return out;
}

struct OptimizerEntry {
  const char* name;
  bool nesterov;  // takes --momentum and --nesterov
  std::unique_ptr<torch::optim::Optimizer> (*make)(const OptimConfig&, const std::vector<ParameterGroup>&);
  // How the optimiser regroups the model's groups before make(); none: as they are.
  std::vector<ParameterGroup> (*regroup)(const OptimConfig&, const std::vector<ParameterGroup>&) = nullptr;
};

const std::vector<OptimizerEntry>& registry() {
  static const std::vector<OptimizerEntry> entries = {
      {"adam", false, make_adam},
      {"sgd", true, make_sgd},
      {"muon", true, make_muon, split_for_muon},
  };
  return entries;
}

const OptimizerEntry& entry(const std::string& name) { return find_registered(registry(), name, "optimizer"); }

std::vector<ParameterGroup> non_empty(const std::vector<ParameterGroup>& groups) {
  std::vector<ParameterGroup> out;
  for (const auto& g : groups)
    if (!g.parameters.empty()) out.push_back(g);
  return out;
}

}  // namespace

std::vector<std::string> optimizer_names() { return registered_names(registry()); }

bool optimizer_supports_nesterov(const std::string& name) { return entry(name).nesterov; }

Optimizer::Optimizer(const OptimConfig& config, const std::vector<ParameterGroup>& groups) {
  const OptimizerEntry& e = entry(config.optimizer);
  groups_ = non_empty(e.regroup ? e.regroup(config, groups) : groups);
  optimizer_ = e.make(config, groups_);
  graph_safe_ = dynamic_cast<GraphSafeStep*>(optimizer_.get());
  muon_ = dynamic_cast<Muon*>(optimizer_.get());
}

std::unique_ptr<Optimizer> make_optimizer(const RunConfig& config, const std::vector<ParameterGroup>& groups) {
  return std::make_unique<Optimizer>(built_optimizer_config(config), groups);
}

void Optimizer::set_total_steps(long total_steps) {
  if (muon_) muon_->set_total_steps(total_steps);
}

void Optimizer::distribute(Communicator& comm) {
  if (muon_) muon_->distribute(comm);
}

namespace {
// A group's rate at `at`: 0 once its training epochs are over; its own
// linear decay or the schedule's `lr` before, times its multiplier.
double group_rate(const ParameterGroup& g, double lr, const StepPoint& at, double peak_lr) {
  if (g.train_epochs < 0) return lr * g.lr_scale;
  const bool whole = g.train_epochs == std::floor(g.train_epochs);
  if (at.steps_per_epoch <= 0 || (whole && !g.decays_over_training)) {
    return at.epoch < g.train_epochs ? lr * g.lr_scale : 0.0;
  }
  const double span = std::ceil(g.train_epochs * static_cast<double>(at.steps_per_epoch));
  const double step = static_cast<double>(at.step);
  if (step >= span) return 0.0;
  return g.decays_over_training ? peak_lr * g.lr_scale * (1.0 - step / span) : lr * g.lr_scale;
}
}  // namespace

void Optimizer::set_learning_rate(double lr, const StepPoint& at, double peak_lr) {
  auto& torch_groups = optimizer_->param_groups();
  for (size_t i = 0; i < torch_groups.size(); ++i) {
    const double rate = group_rate(groups_[i], lr, at, peak_lr);
    if (graph_safe_) {
      graph_safe_->set_learning_rate(i, rate);  // the device tensor a captured step reads
    } else {
      torch_groups[i].options().set_lr(rate);
    }
  }
}

double learning_rate_of(const torch::optim::Optimizer& optimizer) {
  return optimizer.param_groups().at(0).options().get_lr();
}

}  // namespace cifar
