// Muon with Nesterov SGD for the rest, data-parallel (see muon.hpp).
#include "optim/muon.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>

#include "optim/given_options.hpp"
#include "optim/graph_safe_parts.hpp"

namespace cifar {

// ---- options and state, serialised as torch's optimisers serialise theirs --

void MuonOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(nesterov);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(orthogonalize);
}

void MuonOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, momentum);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, nesterov);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, orthogonalize);
}

void MuonParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum_buffer);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(last_rescale);
}

void MuonParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, momentum_buffer);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, step);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, last_rescale);
}

// ---- the optimiser -------------------------------------------------------

namespace {
const MuonOptions& options_of(const torch::optim::OptimizerParamGroup& g) {
  return static_cast<const MuonOptions&>(g.options());
}

torch::Tensor counter(const torch::Tensor& like) {
  return torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(like.device()));
}
}  // namespace

Muon::Muon(std::vector<torch::optim::OptimizerParamGroup> groups, MuonOptions defaults)
    : torch::optim::Optimizer(groups, std::make_unique<MuonOptions>(defaults)) {
  keep_given_options(*this, groups);
  lrs_ = initial_rates(param_groups());
  for (const auto& g : param_groups()) {
    const MuonOptions& o = options_of(g);
    TORCH_CHECK(o.momentum() >= 0 && o.momentum() < 1, "Muon: momentum must be in [0, 1)");
    if (!o.orthogonalize()) continue;
    for (const auto& p : g.params())
      TORCH_CHECK(p.dim() >= 2, "Muon: an orthogonalised group holds matrices and filters only, not a ", p.dim(),
                  "-d tensor");
  }
}

void Muon::set_learning_rate(size_t group, double lr) {
  param_groups().at(group).options().set_lr(lr);
  lrs_.at(group).fill_(lr);
}

void Muon::distribute(Communicator& comm) {
  comm_ = &comm;
  if (prepared_) assign_owners();
}

// States are made before the first step (or taken from a checkpoint); every
// Muon parameter's state then shares one step count and one rescale step.
void Muon::prepare_state() {
  if (prepared_) return;
  matrices_.clear();
  matrix_groups_.clear();
  step_ = last_rescale_ = torch::Tensor();
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const bool orthogonalize = options_of(param_groups()[g]).orthogonalize();
    for (const auto& p : param_groups()[g].params()) {
      auto& slot = state_[state_key(state_, p)];
      if (!slot) {
        auto fresh = std::make_unique<MuonParamState>();
        fresh->momentum_buffer(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        if (orthogonalize) fresh->step(counter(p)).last_rescale(counter(p));
        slot = std::move(fresh);
      }
      auto& st = static_cast<MuonParamState&>(*slot);
      if (!orthogonalize) continue;
      if (!step_.defined()) {
        step_ = st.step();
        last_rescale_ = st.last_rescale();
      }
      st.step(step_).last_rescale(last_rescale_);
      matrices_.push_back({p, st.momentum_buffer(), p.size(0), p.numel() / p.size(0)});
      matrix_groups_.push_back(g);
    }
  }
  prepared_ = true;
  assign_owners();
}

// Largest Newton-Schulz cost (min(m,n)^2 max(m,n)) first, each to the rank
// with the least work so far: the same on every rank, no communication.
void Muon::assign_owners() {
  const int ranks = comm_ ? comm_->size() : 1;
  const size_t n = matrices_.size();
  std::vector<double> cost(n);
  for (size_t i = 0; i < n; ++i) {
    const double lo = static_cast<double>(std::min(matrices_[i].rows, matrices_[i].cols));
    const double hi = static_cast<double>(std::max(matrices_[i].rows, matrices_[i].cols));
    cost[i] = lo * lo * hi;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  std::vector<double> load(static_cast<size_t>(ranks), 0.0);
  owners_.assign(n, 0);
  for (const size_t i : order) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    owners_[i] = static_cast<int>(least);
    load[static_cast<size_t>(least)] += cost[i];
  }
}

std::vector<torch::Tensor> Muon::orthogonalized(const std::vector<torch::Tensor>& updates, const torch::Tensor& scale) {
  const int rank = comm_ ? comm_->rank() : 0;
  const int ranks = comm_ ? comm_->size() : 1;
  std::vector<torch::Tensor> out(updates.size());
  // This rank's matrices, batched by shape.
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_shape;
  for (size_t i = 0; i < updates.size(); ++i)
    if (owners_[i] == rank) by_shape[{matrices_[i].rows, matrices_[i].cols}].push_back(i);
  for (const auto& [shape, members] : by_shape) {
    std::vector<torch::Tensor> batch;
    for (const size_t i : members) batch.push_back(updates[i]);
    torch::Tensor x = torch::stack(batch);
    const auto dtype = x.is_cuda() ? torch::kBFloat16 : torch::kFloat32;
    const torch::Tensor y = newton_schulz(x.to(dtype), scale.to(dtype), newton_schulz_).to(updates.front().dtype());
    for (size_t k = 0; k < members.size(); ++k) out[members[k]] = y[static_cast<int64_t>(k)];
  }
  if (ranks == 1) return out;
  // The exchange: every rank's results in matrix order, padded to the
  // largest share, gathered by all.
  std::vector<int64_t> offset(updates.size()), share(static_cast<size_t>(ranks), 0);
  for (size_t i = 0; i < updates.size(); ++i) {
    offset[i] = share[static_cast<size_t>(owners_[i])];
    share[static_cast<size_t>(owners_[i])] += matrices_[i].rows * matrices_[i].cols;
  }
  const int64_t width = *std::max_element(share.begin(), share.end());
  torch::Tensor mine = torch::zeros({width}, updates.front().options());
  for (size_t i = 0; i < updates.size(); ++i)
    if (owners_[i] == rank) mine.narrow(0, offset[i], out[i].numel()).copy_(out[i].flatten());
  const torch::Tensor all = comm_->all_gather(mine);
  for (size_t i = 0; i < updates.size(); ++i) {
    if (owners_[i] == rank) continue;
    out[i] = all[owners_[i]]
                 .narrow(0, offset[i], matrices_[i].rows * matrices_[i].cols)
                 .view({matrices_[i].rows, matrices_[i].cols});
  }
  return out;
}

// torch::optim::SGD's rule (dampening 0); the zero buffer makes the first
// step's buffer the gradient, as torch's does.
void Muon::step_sgd(size_t g) {
  const MuonOptions& o = options_of(param_groups()[g]);
  for (const auto& p : param_groups()[g].params()) {
    if (!p.grad().defined()) continue;
    auto& st = static_cast<MuonParamState&>(*state_.at(state_key(state_, p)));
    torch::Tensor d = o.weight_decay() != 0 ? p.grad().add(p, o.weight_decay()) : p.grad();
    torch::Tensor& buffer = st.momentum_buffer();
    buffer.mul_(o.momentum()).add_(d);
    d = o.nesterov() ? d.add(buffer, o.momentum()) : buffer;
    p.sub_(d * lrs_[g]);
  }
}

void Muon::step_muon() {
  if (matrices_.empty()) return;
  step_.add_(1);
  const torch::Tensor progress = step_ / static_cast<double>(total_steps_);
  std::vector<torch::Tensor> updates;
  for (size_t i = 0; i < matrices_.size(); ++i) {
    const Matrix& m = matrices_[i];
    const MuonOptions& o = options_of(param_groups()[matrix_groups_[i]]);
    // A parameter without a gradient (unused on every rank alike) has a zero one.
    const torch::Tensor grad = m.param.grad().defined() ? m.param.grad() : torch::zeros_like(m.param);
    m.buffer.mul_(o.momentum()).add_(grad);
    const torch::Tensor u = o.nesterov() ? grad.add(m.buffer, o.momentum()) : m.buffer;
    updates.push_back(u.reshape({m.rows, m.cols}));
  }
  // target_magnitude(), held at its end in a low-rate tail past total_steps_ (as the E1 record recipe)
  const torch::Tensor ended = progress.clamp_max(1.0);
  const torch::Tensor target = 0.5012 * (1 - ended) + 0.0786 * ended;
  const std::vector<torch::Tensor> directions = orthogonalized(updates, target);
  // The norm rescale, due every 2 + floor(15 progress) steps.
  const torch::Tensor due = (step_ - last_rescale_) >= (2 + torch::floor(15 * progress));
  last_rescale_.copy_(torch::where(due, step_, last_rescale_));
  for (size_t i = 0; i < matrices_.size(); ++i) {
    const Matrix& m = matrices_[i];
    const size_t g = matrix_groups_[i];
    const torch::Tensor& lr = lrs_[g];
    const torch::Tensor rescale = std::sqrt(static_cast<double>(m.rows)) / (m.param.norm() + 1e-7);
    m.param.mul_(torch::where(due, rescale, torch::ones_like(rescale)));
    m.param.sub_(directions[i].view(m.param.sizes()) * lr);
    m.param.mul_(1 - lr * options_of(param_groups()[g]).weight_decay());
  }
}

torch::Tensor Muon::step(LossClosure closure) {
  return step_with(closure, [this] {
    prepare_state();
    for (size_t g = 0; g < param_groups().size(); ++g)
      if (!options_of(param_groups()[g]).orthogonalize()) step_sgd(g);
    step_muon();
  });
}

void Muon::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<MuonParamState, MuonOptions>(archive, *this);
}

// Loading replaces the state objects: the shared counters are rebound at the next step.
void Muon::load(torch::serialize::InputArchive& archive) {
  torch::optim::serialize<MuonParamState, MuonOptions>(archive, *this);
  prepared_ = false;
}

}  // namespace cifar
