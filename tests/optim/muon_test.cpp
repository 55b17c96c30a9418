// Muon (optim/muon.hpp) and its Newton-Schulz iteration on known answers:
//  - on X = U diag(s) V^T with known orthogonal U, V, the iteration's output
//    is U diag(p(p(p(s/|s|)))) V^T: U^T NS(X) V is diagonal and its diagonal
//    is the scalar quintic iterated on the normalised singular values, which
//    lie in the quintic's band; tall matrices alike (iterated transposed);
//  - an orthogonal input, all singular values equal, comes out as a multiple
//    of itself: the known fixed point up to the band's factor;
//  - one Muon step by hand: momentum, Nesterov, the orthogonalised update,
//    the norm rescale on the steps it is due, decoupled weight decay; the
//    SGD groups equal torch::optim::SGD;
//  - a checkpoint at step k continues bit-identically to the uninterrupted run;
//  - the group rules: the split of a model's groups, a group trained for a
//    fraction of an epoch with its own linear decay, the linear schedule.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "optim/muon.hpp"
#include "optim/newton_schulz.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"

namespace cifar {
namespace {

torch::Tensor orthogonal(int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  return std::get<0>(at::linalg_qr(torch::randn({n, n}, torch::kFloat64)));
}

// The scalar iteration on singular values, normalised as the matrix is.
std::vector<double> iterated(std::vector<double> s) {
  double norm = 0;
  for (double v : s) norm += v * v;
  norm = std::sqrt(norm);
  for (double& v : s) {
    v /= norm + 1e-5;
    for (int i = 0; i < 3; ++i) v = newton_schulz_polynomial(v);
  }
  return s;
}

void expect_factorised(int64_t m, int64_t n) {
  const int64_t k = std::min(m, n);
  const torch::Tensor U = orthogonal(m, 1).narrow(1, 0, k), V = orthogonal(n, 2).narrow(1, 0, k);
  std::vector<double> s;
  for (int64_t i = 0; i < k; ++i) s.push_back(1.0 - 0.6 * static_cast<double>(i) / static_cast<double>(k));  // 1 .. 0.4
  const torch::Tensor S = torch::tensor(s, torch::kFloat64);
  const torch::Tensor X = U.mm(torch::diag(S)).mm(V.t());
  const torch::Tensor Y = newton_schulz(X);
  ASSERT_EQ(Y.sizes(), X.sizes());
  const torch::Tensor D = U.t().mm(Y).mm(V);
  const std::vector<double> want = iterated(s);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      const double got = D[i][j].item<double>();
      if (i == j) {
        EXPECT_NEAR(got, want[static_cast<size_t>(i)], 1e-9) << m << "x" << n << " singular value " << i;
        EXPECT_GT(got, 0.759) << "inside the quintic's band (inputs of at least 0.02 after the normalisation)";
        EXPECT_LT(got, 1.361) << "inside the quintic's band";
      } else {
        EXPECT_NEAR(got, 0.0, 1e-9) << m << "x" << n << " (" << i << "," << j << ")";
      }
    }
  }
  // Nothing outside the singular subspaces: Y = U D V^T exactly.
  EXPECT_LT((Y - U.mm(D).mm(V.t())).abs().max().item<double>(), 1e-9);
}

TEST(NewtonSchulz, KeepsTheSingularVectorsAndMapsTheSingularValuesByTheQuintic) {
  expect_factorised(6, 6);
  expect_factorised(5, 12);
  expect_factorised(12, 5);  // tall: iterated transposed
}

TEST(NewtonSchulz, AnOrthogonalMatrixIsItsOwnDirection) {
  const int64_t n = 8;
  const torch::Tensor Q = orthogonal(n, 3).to(torch::kFloat32);
  const torch::Tensor Y = newton_schulz(Q.unsqueeze(0) * 7.0).squeeze(0);
  const double factor = iterated(std::vector<double>(n, 1.0))[0];
  EXPECT_GT(factor, 0.759);
  EXPECT_LT(factor, 1.361);
  EXPECT_LT((Y - factor * Q).abs().max().item<float>(), 2e-5);
  // Y^T Y = factor^2 I: orthogonal up to the band's factor.
  EXPECT_LT((Y.t().mm(Y) - factor * factor * torch::eye(n)).abs().max().item<float>(), 5e-5);
}

TEST(NewtonSchulz, BatchesEqualSingleMatrices) {
  torch::manual_seed(4);
  const torch::Tensor X = torch::randn({3, 16, 40});
  const torch::Tensor scale = torch::tensor(0.3);
  const torch::Tensor batched = newton_schulz(X, scale);
  for (int64_t i = 0; i < 3; ++i) EXPECT_LT((batched[i] - newton_schulz(X[i], scale)).abs().max().item<float>(), 1e-6);
}

// A filter, a matrix and a bias; the filter and the matrix orthogonalised.
struct MuonRun {
  std::vector<torch::Tensor> w;
  std::unique_ptr<Muon> muon;
};

MuonRun make_run(long total_steps) {
  torch::manual_seed(9);
  MuonRun r;
  r.w = {torch::randn({4, 2, 3, 3}).requires_grad_(true), torch::randn({6, 5}).requires_grad_(true),
         torch::randn({4}).requires_grad_(true)};
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{r.w[2]},
                      std::make_unique<MuonOptions>(MuonOptions(0.1).momentum(0.8).weight_decay(0.01)));
  groups.emplace_back(
      std::vector<torch::Tensor>{r.w[0], r.w[1]},
      std::make_unique<MuonOptions>(MuonOptions(0.2).momentum(0.6).weight_decay(0.05).orthogonalize(true)));
  r.muon = std::make_unique<Muon>(std::move(groups), MuonOptions(0.1));
  r.muon->set_total_steps(total_steps);
  return r;
}

// Gradients that depend on the weights, so a difference would compound.
void backward(const MuonRun& r) {
  torch::Tensor loss = torch::zeros({});
  for (size_t i = 0; i < r.w.size(); ++i) loss = loss + (torch::sin(r.w[i] * (1.0 + i)) + 0.3 * r.w[i] * r.w[i]).sum();
  loss.backward();
}

void train(MuonRun& r, int from, int to) {
  for (int s = from; s < to; ++s) {
    r.muon->zero_grad();
    backward(r);
    r.muon->set_learning_rate(0, 0.1 * (1.0 - s / 20.0));
    r.muon->set_learning_rate(1, 0.2 * (1.0 - s / 20.0));
    r.muon->step();
  }
}

TEST(Muon, OneStepByHand) {
  MuonRun r = make_run(10);
  const std::vector<torch::Tensor> w0 = {r.w[0].detach().clone(), r.w[1].detach().clone(), r.w[2].detach().clone()};
  backward(r);
  const std::vector<torch::Tensor> g = {r.w[0].grad().clone(), r.w[1].grad().clone(), r.w[2].grad().clone()};
  r.muon->step();
  torch::NoGradGuard no_grad;
  // Step 1 of 10: progress 0.1, rescale period 2 + floor(1.5) = 3, not due (1 - 0 < 3).
  const torch::Tensor target = torch::tensor(Muon::target_magnitude(0.1));
  for (int i = 0; i < 2; ++i) {
    const torch::Tensor buf = g[i];            // 0.6 * 0 + g
    const torch::Tensor u = g[i] + 0.6 * buf;  // Nesterov
    const torch::Tensor o = newton_schulz(u.reshape({u.size(0), -1}), target).view(u.sizes());
    const torch::Tensor want = (w0[i] - 0.2 * o) * (1 - 0.2 * 0.05);
    EXPECT_LT((r.w[i] - want).abs().max().item<float>(), 1e-6) << "parameter " << i;
  }
  // The SGD group: torch::optim::SGD with the same options.
  torch::Tensor b = w0[2].clone().requires_grad_(true);
  torch::optim::SGD sgd({b}, torch::optim::SGDOptions(0.1).momentum(0.8).nesterov(true).weight_decay(0.01));
  b.mutable_grad() = g[2].clone();
  sgd.step();
  EXPECT_LT((r.w[2] - b).abs().max().item<float>(), 1e-7);
}

TEST(Muon, RescalesTheNormWhenDue) {
  // 1000 steps: the period is 2 + floor(15 * step / 1000) = 2 early on, so
  // step 1 does not rescale (1 - 0 < 2) and step 2 does (2 - 0 >= 2).
  MuonRun r = make_run(1000);
  train(r, 0, 1);
  EXPECT_GT(std::abs(r.w[0].norm().item<double>() - 2.0), 0.1) << "not rescaled at step 1";
  const torch::Tensor before = r.w[0].detach().clone();
  r.muon->zero_grad();
  backward(r);
  r.muon->set_learning_rate(1, 0.0);  // no update and no decay: the rescale alone
  r.muon->step();
  torch::NoGradGuard no_grad;
  EXPECT_NEAR(r.w[0].norm().item<double>(), 2.0, 1e-5) << "sqrt(4 out channels) at step 2";
  EXPECT_LT((r.w[0] / r.w[0].norm() - before / before.norm()).abs().max().item<float>(), 1e-6)
      << "only the norm changes";
}

std::string saved(const Muon& m) {
  torch::serialize::OutputArchive archive;
  m.save(archive);
  std::ostringstream os;
  archive.save_to(os);
  return os.str();
}

TEST(Muon, ResumesBitIdentically) {
  MuonRun whole = make_run(12);
  train(whole, 0, 12);
  MuonRun first = make_run(12);
  train(first, 0, 5);
  const std::string checkpoint = saved(*first.muon);
  const std::vector<torch::Tensor> at5 = {first.w[0].detach().clone(), first.w[1].detach().clone(),
                                          first.w[2].detach().clone()};
  MuonRun resumed = make_run(12);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < at5.size(); ++i) resumed.w[i].copy_(at5[i]);
  }
  torch::serialize::InputArchive archive;
  std::istringstream is(checkpoint);
  archive.load_from(is);
  resumed.muon->load(archive);
  train(resumed, 5, 12);
  for (size_t i = 0; i < whole.w.size(); ++i) EXPECT_TRUE(torch::equal(whole.w[i], resumed.w[i])) << "parameter " << i;
}

TEST(Muon, OptimizerSplitsTheModelsGroups) {
  torch::manual_seed(1);
  const torch::Tensor filter = torch::randn({4, 2, 3, 3}).requires_grad_(true);
  const torch::Tensor matrix = torch::randn({6, 5}).requires_grad_(true);
  const torch::Tensor bias = torch::randn({4}).requires_grad_(true);
  OptimConfig c;
  c.optimizer = "muon";
  c.lr = 0.5;
  c.muon_lr = 0.2;
  const std::vector<ParameterGroup> model{{"weights", {filter, matrix, bias}, 1.0, 1.0, -1}};
  Optimizer filters_only(c, model);
  ASSERT_EQ(filters_only.groups().size(), 2u);
  EXPECT_EQ(filters_only.groups()[0].parameters.size(), 2u) << "the matrix and the bias by SGD";
  EXPECT_EQ(filters_only.groups()[1].parameters.size(), 1u) << "the filter by Muon";
  EXPECT_TRUE(filters_only.groups()[1].orthogonalize);
  filters_only.set_learning_rate(0.25, 0);  // half the peak
  EXPECT_DOUBLE_EQ(filters_only.torch_optimizer().param_groups()[1].options().get_lr(), 0.1);
  c.muon_matrices = true;
  Optimizer matrices(c, model);
  EXPECT_EQ(matrices.groups()[1].parameters.size(), 2u) << "the filter and the matrix by Muon";
}

TEST(Optimizer, AGroupForAFractionOfAnEpochDecaysOverItsOwnSteps) {
  const torch::Tensor a = torch::zeros({2}).requires_grad_(true), b = torch::zeros({2}).requires_grad_(true);
  OptimConfig c;
  c.optimizer = "sgd";
  ParameterGroup rest{"rest", {a}, 2.0, 1.0, -1};
  ParameterGroup bias{"bias", {b}, 1.0, 1.0, 0.19};
  bias.decays_over_training = true;
  Optimizer opt(c, {rest, bias});
  auto lr = [&](size_t g) { return opt.torch_optimizer().param_groups()[g].options().get_lr(); };
  // 32 steps per epoch: ceil(0.19 * 32) = 7 steps, at 1, 6/7, ..., 1/7 of the peak.
  for (long step : {0L, 3L, 6L, 7L, 40L}) {
    opt.set_learning_rate(0.3, StepPoint{static_cast<int>(step / 32), step, 32}, 0.5);
    EXPECT_DOUBLE_EQ(lr(0), 0.6) << "the schedule's rate times 2";
    EXPECT_NEAR(lr(1), step < 7 ? 0.5 * (1.0 - step / 7.0) : 0.0, 1e-15) << "step " << step;
  }
}

TEST(Schedule, LinearFallsFromThePeakToZero) {
  const ScheduleOptions o{ScheduleKind::Linear, 2.0, 243, 0};
  EXPECT_DOUBLE_EQ(learning_rate(o, 0), 2.0);
  EXPECT_DOUBLE_EQ(learning_rate(o, 81), 2.0 * (1.0 - 81.0 / 243.0));
  EXPECT_DOUBLE_EQ(learning_rate(o, 243), 0.0);
}

}  // namespace
}  // namespace cifar
