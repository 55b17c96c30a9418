// GradientReducer: N ranks with per-rank batch B/N must reach the same
// parameters as one rank with batch B. Each rank computes the one-rank
// reference itself on the full batch, so the comparison needs no extra
// communication and has a known answer.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "comm/gradient_reducer.hpp"
#include "comm/mpi_communicator.hpp"
#include "support/mpi_test_env.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

MpiCommunicator& comm() {
  static MpiCommunicator c(test::env().comm());
  return c;
}

// Small conv net. BatchNorm (optional) normalises with per-rank batch
// statistics, so it is left out of the equivalence runs, as with PyTorch DDP.
struct NetImpl : torch::nn::Module {
  explicit NetImpl(bool batch_norm = false) {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3)));
    if (batch_norm) bn = register_module("bn", torch::nn::BatchNorm2d(8));
    fc1 = register_module("fc1", torch::nn::Linear(8 * 6 * 6, 64));
    fc2 = register_module("fc2", torch::nn::Linear(64, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = conv->forward(x);
    if (bn) x = bn->forward(x);
    x = torch::max_pool2d(torch::relu(x), 2);
    return fc2->forward(torch::relu(fc1->forward(x.reshape({x.size(0), -1}))));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Net);

std::vector<torch::Tensor> buffers_of(Net& net) { return net->buffers(); }

struct Data {
  torch::Tensor x, y;
};
Data make_data(int64_t n) {
  torch::manual_seed(1234);
  return {torch::randn({n, 3, 14, 14}), torch::randint(0, 10, {n})};
}

std::vector<torch::Tensor> snapshot(Net& net) {
  std::vector<torch::Tensor> out;
  for (auto& p : net->parameters()) out.push_back(p.detach().clone());
  return out;
}

double max_rel_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(a[i].abs().max().item<double>(), 1e-12);
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>() / scale);
  }
  return worst;
}

// Trains K steps of Adam on batch rows [offset, offset + rows) of each global batch.
// With a reducer, rows are this rank's shard; without, the whole batch.
std::vector<torch::Tensor> train(Net& net, const Data& d, int64_t global_batch, int steps, int accumulate,
                                 GradientReducer* reducer, int rank, int world) {
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3));
  const int64_t per_rank = global_batch / world;
  const int64_t micro = per_rank / accumulate;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    for (int m = 0; m < accumulate; ++m) {
      // Rank r's micro-batch m covers the same samples that the one-rank run
      // sees as part of its batch; the union over ranks is the global batch.
      const int64_t begin = s * global_batch + rank * per_rank + m * micro;
      auto x = d.x.narrow(0, begin, micro);
      auto y = d.y.narrow(0, begin, micro);
      if (reducer) {
        reducer->broadcast_buffers();
        reducer->prepare_for_backward(m == accumulate - 1, s);
      }
      auto loss = torch::nll_loss(torch::log_softmax(net->forward(x), 1), y) / accumulate;
      loss.backward();
    }
    if (reducer) reducer->finish();
    opt.step();
  }
  return snapshot(net);
}

struct Setup {
  double bucket_mb;
  int accumulate;
};
class Equivalence : public ::testing::TestWithParam<Setup> {};

TEST_P(Equivalence, NRanksEqualOneRankWithWholeBatch) {
  const auto [bucket_mb, accumulate] = GetParam();
  const int world = comm().size(), rank = comm().rank();
  const int64_t global_batch = 32;
  const int steps = 5;
  const Data d = make_data(global_batch * steps);

  // Reference: one rank, the whole batch per step.
  torch::manual_seed(7);
  Net reference;
  const auto initial = snapshot(reference);
  const auto expected = train(reference, d, global_batch, steps, accumulate, nullptr, 0, 1);

  // Distributed: every rank starts from different weights; the reducer broadcasts rank 0's.
  torch::manual_seed(rank == 0 ? 7 : 100 + rank);
  Net net;
  const auto bytes = static_cast<size_t>(bucket_mb * 1024 * 1024);
  GradientReducer reducer(net->parameters(), buffers_of(net), comm(), BucketOptions{bytes, bytes});
  if (bucket_mb < 0.05) {
    EXPECT_GT(reducer.num_buckets(), 2u);
  }
  EXPECT_EQ(max_rel_diff(initial, snapshot(net)), 0.0) << "parameters are broadcast from rank 0";
  const auto got = train(net, d, global_batch, steps, accumulate, &reducer, rank, world);
  const double diff = max_rel_diff(expected, got);
  EXPECT_LE(diff, 1e-5) << "world " << world << ", " << reducer.num_buckets() << " bucket(s)";
  if (rank == 0) {
    std::printf("world %d, %zu bucket(s), accumulate %d: max relative difference %.3g\n", world, reducer.num_buckets(),
                accumulate, diff);
  }
}

INSTANTIATE_TEST_SUITE_P(Buckets, Equivalence,
                         ::testing::Values(Setup{25.0, 1}, Setup{0.001, 1}, Setup{0.001, 2}, Setup{25.0, 4}),
                         [](const auto& info) {
                           return std::string(info.param.bucket_mb > 1 ? "one_bucket" : "several_buckets") +
                                  "_accumulate" + std::to_string(info.param.accumulate);
                         });

TEST(BucketPlan, ReverseOrderAndSizeLimits) {
  // Parameters of 400 KiB, 400 KiB, 4 B, 800 KiB (in model order).
  const std::vector<size_t> bytes{400 << 10, 400 << 10, 4, 800 << 10};
  const auto plan = plan_buckets(bytes, BucketOptions{size_t{1} << 20, size_t{1} << 20});
  // Reverse order: 3 (800K), 2 (4B), 1 (400K) reaches 1 MiB → closes; then 0.
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0], (std::vector<size_t>{3, 2, 1}));
  EXPECT_EQ(plan[1], (std::vector<size_t>{0}));
  EXPECT_EQ(plan_buckets(bytes, BucketOptions{1, 1}).size(), 4u);              // one per parameter
  EXPECT_EQ(plan_buckets(bytes, BucketOptions{1 << 30, 1 << 30}).size(), 1u);  // everything in one
}

TEST(BucketPlan, DtypesNeverShareABucket) {
  const auto f32 = torch::kFloat32, f64 = torch::kFloat64;
  const BucketOptions roomy{size_t{1} << 30, size_t{1} << 30};
  // One bucket per dtype, numbered as backward completes them: float64's
  // lowest parameter (1) comes before float32's (0).
  EXPECT_EQ(plan_buckets({4, 8, 4, 8}, {f32, f64, f32, f64}, roomy),
            (std::vector<std::vector<size_t>>{{3, 1}, {2, 0}}));
  // float64's only parameter is 0, the last gradient of backward: its bucket is last.
  EXPECT_EQ(plan_buckets({8, 4, 4, 4}, {f64, f32, f32, f32}, roomy),
            (std::vector<std::vector<size_t>>{{3, 2, 1}, {0}}));
  // Size limits per dtype, each dtype's first bucket the small one: float32's
  // 600 KiB + 600 KiB closes at 1 MiB; float64's 600 KiB each close alone
  // (first bucket 512 KiB), then together (later buckets 1 MiB).
  const BucketOptions limits{size_t{512} << 10, size_t{1} << 20};
  EXPECT_EQ(plan_buckets({600 << 10, 600 << 10, 600 << 10, 600 << 10, 600 << 10}, {f64, f64, f32, f64, f32}, limits),
            (std::vector<std::vector<size_t>>{{4}, {3}, {2}, {1, 0}}));
  // One dtype: the plan without dtypes, bucket for bucket.
  const std::vector<size_t> bytes{400 << 10, 400 << 10, 4, 800 << 10};
  for (const BucketOptions o : {BucketOptions{1 << 20, 1 << 20}, BucketOptions{1, 1}, roomy})
    EXPECT_EQ(plan_buckets(bytes, {f64, f64, f64, f64}, o), plan_buckets(bytes, o));
}

// A model of float32 and float64 parameters. Rank r's gradient of element i
// of parameter p is (r + 1) * g_p(i), so the average is (W + 1) / 2 * g_p(i),
// exact in both dtypes for W = 1, 2, 4. float64's g holds 1 + 2^-40, which
// float32 cannot: a float64 gradient averaged in a float32 bucket (the last
// parameter, float32, gave its dtype to a shared bucket) would lose it.
TEST(Reducer, MixedDtypesAreAveragedEachInItsOwn) {
  const int world = comm().size(), rank = comm().rank();
  const std::vector<torch::ScalarType> dtypes{torch::kFloat64, torch::kFloat32, torch::kFloat64, torch::kFloat32};
  const auto g = [&](size_t p) {
    const auto i = torch::arange(static_cast<int64_t>(p) + 2, torch::kFloat64) + 1;
    return (dtypes[p] == torch::kFloat64 ? i * (1 + std::ldexp(1.0, -40)) : i).to(dtypes[p]);
  };
  for (const size_t bucket_bytes : {size_t{1} << 30, size_t{1}}) {
    std::vector<torch::Tensor> params;
    for (size_t p = 0; p < dtypes.size(); ++p)
      params.push_back(torch::zeros({static_cast<int64_t>(p) + 2}, dtypes[p]).requires_grad_());
    GradientReducer reducer(params, {}, comm(), BucketOptions{bucket_bytes, bucket_bytes});
    EXPECT_EQ(reducer.num_buckets(), bucket_bytes > 1 ? 2u : 4u);
    reducer.prepare_for_backward(true, 0);
    torch::Tensor loss = torch::zeros({}, torch::kFloat64);
    for (size_t p = 0; p < params.size(); ++p) loss = loss + (params[p] * g(p) * (rank + 1)).sum().to(torch::kFloat64);
    loss.backward();
    reducer.finish();
    for (size_t p = 0; p < params.size(); ++p) {
      const torch::Tensor want = g(p) * ((world + 1) / 2.0);
      EXPECT_EQ(params[p].grad().scalar_type(), dtypes[p]);
      EXPECT_TRUE(torch::equal(params[p].grad(), want))
          << "parameter " << p << " (" << dtype_name(dtypes[p]) << "), buckets of " << bucket_bytes << " B: got "
          << params[p].grad() << " want " << want;
    }
  }
}

TEST(Overlap, FirstBucketLaunchesBeforeBackwardEnds) {
  torch::manual_seed(3);
  Net net;
  GradientReducer reducer(net->parameters(), buffers_of(net), comm(), BucketOptions{1024, 1024});
  ASSERT_GT(reducer.num_buckets(), 2u);
  const Data d = make_data(64);
  reducer.prepare_for_backward(true, 0);
  torch::nn::functional::cross_entropy(net->forward(d.x), d.y).backward();
  reducer.finish();
  const auto& t = reducer.last_timing();
  // Buckets start in order, the first well before backward returned to the caller.
  for (size_t b = 1; b < t.bucket_launched.size(); ++b) EXPECT_LE(t.bucket_launched[b - 1], t.bucket_launched[b]);
  EXPECT_LT(t.bucket_launched.front(), t.bucket_launched.back());
  EXPECT_LT(t.bucket_launched.front(), t.finish_called);
  if (comm().rank() == 0) {
    using us = std::chrono::microseconds;
    std::printf("bucket launches after backward start (us):");
    for (auto& l : t.bucket_launched)
      std::printf(" %lld", static_cast<long long>(std::chrono::duration_cast<us>(l - t.backward_started).count()));
    std::printf("; backward returned at %lld us\n",
                static_cast<long long>(std::chrono::duration_cast<us>(t.finish_called - t.backward_started).count()));
  }
}

TEST(Reducer, BuffersComeFromRankZero) {
  torch::manual_seed(11);
  Net net(/*batch_norm=*/true);
  GradientReducer reducer(net->parameters(), buffers_of(net), comm(), BucketOptions{});
  // Ranks see different data, so their running statistics drift apart...
  torch::manual_seed(20 + comm().rank());
  net->forward(torch::randn({8, 3, 14, 14}) * (comm().rank() + 1));
  // ...until the next step's broadcast makes them rank 0's.
  torch::Tensor mean = net->bn->running_mean.clone();
  comm().broadcast(mean, 0);
  reducer.broadcast_buffers();
  EXPECT_TRUE(torch::equal(net->bn->running_mean, mean));
  EXPECT_EQ(net->bn->num_batches_tracked.item<int64_t>(), 1);
}

// The divergence guard's verdict: a NaN loss on the last rank only makes that
// rank's gradients NaN, and after the average (small buckets: several of
// them) every rank's are, so every rank reaches the same verdict without
// communicating.
TEST(Reducer, ANonFiniteGradientOnOneRankIsSeenByEveryRank) {
  torch::manual_seed(11);
  Net net;
  GradientReducer reducer(net->parameters(), {}, comm(), BucketOptions{1024, 1024});
  ASSERT_GT(reducer.num_buckets(), 1u);
  const Data d = make_data(8);
  for (const bool poison : {false, true}) {
    for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();
    reducer.prepare_for_backward(true, 0);
    torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(d.x), d.y);
    if (poison && comm().rank() == comm().size() - 1) loss = loss * std::numeric_limits<float>::quiet_NaN();
    loss.backward();
    reducer.finish();
    EXPECT_EQ(reducer.gradients_finite().item<bool>(), !poison) << "rank " << comm().rank();
  }
}

TEST(Reducer, DifferentModelOnOneRankIsRefused) {
  if (comm().size() < 2) GTEST_SKIP() << "needs two ranks to disagree";
  torch::nn::Linear model(comm().rank() == 1 ? 5 : 4, 3);
  try {
    GradientReducer reducer(model->parameters(), {}, comm(), BucketOptions{});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cifar
