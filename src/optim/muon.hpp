// Muon (--optimizer muon): momentum whose update is orthogonalised by the
// quintic Newton-Schulz iteration (newton_schulz.hpp), for the weight
// matrices and convolution filters (a filter [out,in,kh,kw] as the matrix
// [out, in*kh*kw]); Nesterov SGD for everything else, as the CIFAR-10 record
// recipes (airbench94_muon, hiverge/cifar10-speedrun) train biases, norms and
// the head. Each parameter group of the optimiser is one or the other
// (MuonOptions::orthogonalize); split_for_muon() makes them from a model's
// groups.
//
// A Muon group's step, per parameter p with gradient g (as the Hiverge record recipe):
//   buf = momentum * buf + g;  u = nesterov ? g + momentum * buf : buf
//   O = NS(u), batched over the parameters of one matrix shape, the input
//       first scaled to a target magnitude interpolated from 0.5012 to 0.0786
//       over the run (then normalised to norm 1, so it only meets the eps);
//   every `2 + floor(15 * progress)` steps: p *= sqrt(out) / (|p| + 1e-7)
//       (the norm rescale), with progress = step / total steps;
//   p -= lr * O;  p *= 1 - lr * weight_decay (decoupled).
// An SGD group's step is torch::optim::SGD's (coupled weight decay, the
// buffer starting from the first gradient; dampening 0).
//
// Data-parallel: with distribute(), each rank orthogonalises its share of the
// matrices (assigned once, largest first to the least-loaded rank, so every
// rank computes the same assignment) and one all-gather gives every rank all
// the results: the Newton-Schulz cost divides among the ranks.
//
// Graph-safe: the learning rates, the step count and the last rescale step
// are tensors on the parameters' device, the rescale decision a torch::where,
// so a CUDA graph captured around step() replays the right numbers, and
// nothing in step() reads a device value on the host.
//
// Newton-Schulz runs in bfloat16 on GPUs (the record's half precision) and
// float32 on CPUs; the momentum buffers have the parameters' dtype.
//
// State: per parameter its momentum buffer and (Muon groups) the step count
// and the step of the last rescale, serialised as torch's optimisers do, so
// a checkpoint resumes the run exactly.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "comm/communicator.hpp"
#include "optim/fused_optimizer.hpp"
#include "optim/newton_schulz.hpp"

namespace cifar {

struct MuonOptions : public torch::optim::OptimizerCloneableOptions<MuonOptions> {
  explicit MuonOptions(double lr = 0.02) : lr_(lr) {}
  TORCH_ARG(double, lr);
  TORCH_ARG(double, momentum) = 0.9;
  TORCH_ARG(bool, nesterov) = true;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(bool, orthogonalize) = false;  // a Muon group; else SGD

 public:  // TORCH_ARG leaves the members private
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct MuonParamState : public torch::optim::OptimizerCloneableParamState<MuonParamState> {
  TORCH_ARG(torch::Tensor, momentum_buffer);
  TORCH_ARG(torch::Tensor, step);          // Muon groups: steps taken (0-dim float32, on the device)
  TORCH_ARG(torch::Tensor, last_rescale);  // Muon groups: the step of the last norm rescale

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
};

class Muon final : public torch::optim::Optimizer, public GraphSafeStep {
 public:
  Muon(std::vector<torch::optim::OptimizerParamGroup> groups, MuonOptions defaults);

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
  void set_learning_rate(size_t group, double lr) override;

  // The run's length in steps: the progress the rescale period and the
  // target magnitude follow.
  void set_total_steps(long total_steps) { total_steps_ = std::max(1L, total_steps); }
  // Orthogonalise this rank's share only and all-gather the rest over `comm`
  // (which must outlive the optimiser). Every rank must call it.
  void distribute(Communicator& comm);
  // The rank that orthogonalises Muon parameter `i` (in group order).
  const std::vector<int>& owners() const { return owners_; }

  // The target magnitude at `progress` in [0, 1].
  static double target_magnitude(double progress) { return 0.5012 * (1 - progress) + 0.0786 * progress; }

 private:
  struct Matrix {  // one Muon parameter
    torch::Tensor param, buffer;
    int64_t rows = 0, cols = 0;
  };
  void prepare_state();
  void step_sgd(size_t g);
  void step_muon();
  // The orthogonalised updates of every Muon parameter, [rows, cols] each.
  std::vector<torch::Tensor> orthogonalized(const std::vector<torch::Tensor>& updates, const torch::Tensor& scale);
  void assign_owners();

  std::vector<torch::Tensor> lrs_;  // per group, on the parameters' device
  std::vector<Matrix> matrices_;
  std::vector<size_t> matrix_groups_;  // the group of each matrix
  torch::Tensor step_, last_rescale_;  // shared by every Muon parameter's state
  bool prepared_ = false;
  long total_steps_ = 1;
  Communicator* comm_ = nullptr;
  std::vector<int> owners_;
  NewtonSchulzOptions newton_schulz_;
};

}  // namespace cifar
