// Data-parallel Muon: on N ranks, each orthogonalising its share of the
// matrices and all-gathering the rest, the step equals the one-rank step to
// rounding. Every rank computes the one-rank reference itself from the same
// seed, so the comparison has a known answer without more communication.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "comm/mpi_communicator.hpp"
#include "optim/muon.hpp"
#include "support/mpi_test_env.hpp"

namespace cifar {
namespace {

MpiCommunicator& comm() {
  static MpiCommunicator c(test::env().comm());
  return c;
}

struct MuonRun {
  std::vector<torch::Tensor> w;
  std::unique_ptr<Muon> muon;
};

// Filters and matrices of several shapes (three of one, as a network's
// blocks), tall and wide, and a bias for the SGD group.
MuonRun make_run() {
  torch::manual_seed(21);
  MuonRun r;
  for (const auto& shape : std::vector<std::vector<int64_t>>{
           {16, 8, 3, 3}, {16, 16, 3, 3}, {16, 16, 3, 3}, {16, 16, 3, 3}, {32, 16, 3, 3}, {40, 12}, {10, 32}, {16}})
    r.w.push_back(torch::randn(shape).requires_grad_(true));
  std::vector<torch::Tensor> matrices(r.w.begin(), r.w.end() - 1);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{r.w.back()},
                      std::make_unique<MuonOptions>(MuonOptions(0.05).momentum(0.8)));
  groups.emplace_back(
      matrices, std::make_unique<MuonOptions>(MuonOptions(0.2).momentum(0.65).weight_decay(0.01).orthogonalize(true)));
  r.muon = std::make_unique<Muon>(std::move(groups), MuonOptions(0.05));
  r.muon->set_total_steps(20);
  return r;
}

void train(MuonRun& r, int steps) {
  for (int s = 0; s < steps; ++s) {
    r.muon->zero_grad();
    torch::Tensor loss = torch::zeros({});
    for (size_t i = 0; i < r.w.size(); ++i)
      loss = loss + (torch::sin(r.w[i] * (1.0 + 0.1 * i)) + 0.2 * r.w[i] * r.w[i]).sum();
    loss.backward();
    r.muon->set_learning_rate(1, 0.2 * (1.0 - s / 20.0));
    r.muon->step();
  }
}

TEST(MuonDistributed, EqualsTheOneRankStep) {
  MuonRun one = make_run();
  train(one, 12);
  MuonRun many = make_run();
  many.muon->distribute(comm());
  train(many, 12);
  for (size_t i = 0; i < one.w.size(); ++i) {
    const double diff = (one.w[i] - many.w[i]).abs().max().item<double>();
    EXPECT_LT(diff, 1e-5) << "parameter " << i << " on rank " << comm().rank() << " of " << comm().size();
  }
  // The work is shared: with at least as many matrices as ranks, every rank owns one.
  const std::vector<int>& owners = many.muon->owners();
  ASSERT_EQ(owners.size(), 7u);
  EXPECT_EQ(std::set<int>(owners.begin(), owners.end()).size(), static_cast<size_t>(comm().size()));
}

}  // namespace
}  // namespace cifar
