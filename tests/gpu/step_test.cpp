// The steady-state training step on a GPU, with known answers:
//  - it never makes the host wait for the device: steps run under CUDA's
//    sync-debug mode set to error (c10::cuda::warning_state()), so a
//    blocking copy, .item() or a stream synchronisation throws. The step is
//    the Trainer's, part by part: the GPU-resident loader with augmentation,
//    zero_grad and the scheduled learning rate, autocast forward, loss,
//    backward with the bucketed NCCL all-reduce, the wait, the optimiser
//    step, the device-side loss sums and a progress report that is not due;
//  - --cuda-graphs: a graphed run (warm-up, capture, replays, an eager
//    partial batch in between) equals an eager run with the same graph-safe
//    optimiser under deterministic cuDNN, the schedule's learning rate
//    reaches the replays, and replays are free of host synchronisation too;
//  - a broadcast and an all-gather captured in a graph at one rank (the
//    program calls neither at world size 1, so no training run captures them).
// Skipped (visibly) without a GPU and a CUDA LibTorch; NCCL: one rank.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <optional>

#include "comm/gradient_reducer.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/nccl_communicator.hpp"
#include "data/batch_loader.hpp"
#include "gpu/cuda_runtime.hpp"
#include "gpu/torch_stream.hpp"
#include "model/model.hpp"
#include "optim/optimizer.hpp"
#include "report/progress.hpp"
#include "require_gpu.hpp"
#include "step/cuda_graph_step.hpp"
#include "step/precision.hpp"
#include "support/mpi_test_env.hpp"

namespace cifar {
namespace {

#define REQUIRE_ONE_GPU_RANK()                                                        \
  do {                                                                                \
    REQUIRE_GPU();                                                                    \
    if (test::env().world().size != 1) GTEST_SKIP() << "NCCL needs one GPU per rank"; \
  } while (0)

torch::Device gpu() { return torch::Device(torch::kCUDA, 0); }

Communicator& nccl() {
  static std::unique_ptr<Communicator> c = make_nccl_communicator(test::env().comm(), 0, std::chrono::seconds(60));
  return *c;
}

// Sync-debug errors on while alive.
class SyncErrors {
 public:
  SyncErrors() { set_cuda_sync_errors(true); }
  ~SyncErrors() { set_cuda_sync_errors(false); }
};

Split resident_split(int64_t n) {
  torch::manual_seed(11);
  Split s;
  s.name = "train";
  s.images = torch::randint(0, 256, {n, 3, 32, 32}, torch::kLong).to(torch::kUInt8).to(gpu());
  s.labels = torch::randint(0, 10, {n}, torch::kLong);
  return s;
}

BatchLoader loader(const Split& split, int64_t batch) {
  std::vector<int64_t> indices(static_cast<size_t>(split.images.size(0)));
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>(i);
  LoaderOptions o;
  o.augment = true;
  o.seed = 5;
  o.memory_format = torch::MemoryFormat::ChannelsLast;
  o.resident = true;  // resident_split()
  return BatchLoader(split, indices, batch, o, gpu());
}

// A model with its reducer and optimiser, as the Trainer builds them.
struct Rig {
  std::shared_ptr<Model> model;
  std::vector<torch::Tensor> params;
  std::unique_ptr<GradientReducer> reducer;
  std::unique_ptr<Optimizer> optimizer;
  Precision precision = Precision::Fp32;

  Rig(const std::string& optimizer_name, bool fused, Precision p) : precision(p) {
    torch::manual_seed(3);
    model = make_model("convnet");
    model->to(gpu());
    set_memory_format(*model, torch::MemoryFormat::ChannelsLast);
    const auto groups = model->parameter_groups();
    params = trainable_parameters(groups);
    reducer = std::make_unique<GradientReducer>(params, model->buffers(), nccl(), BucketOptions{1 << 16, 1 << 18});
    OptimConfig c;
    c.optimizer = optimizer_name;
    c.fused = fused;
    c.nesterov = optimizer_name == "sgd";
    c.lr = optimizer_name == "sgd" ? 0.02 : 1e-3;
    optimizer = std::make_unique<Optimizer>(c, groups);
  }

  void start_step(double lr) {
    optimizer->zero_grad();
    optimizer->set_learning_rate(lr, 0);
  }
  // Trainer::forward_loss, backward, Trainer::apply_update's device work.
  torch::Tensor device_work(const Batch& b) {
    reducer->broadcast_buffers();
    reducer->prepare_for_backward(true, 0);
    torch::Tensor loss;
    {
      AutocastScope autocast(precision, gpu());
      loss = torch::nn::functional::cross_entropy(model->forward(b.images).to(torch::kFloat32), b.labels);
    }
    loss.backward();
    reducer->finish();
    optimizer->step();
    return loss;
  }
};

double lr_at(int step) { return 1e-3 * (1.0 + 0.1 * step); }

void steady_state_has_no_sync(const std::string& optimizer_name, bool fused, Precision precision) {
  Rig rig(optimizer_name, fused, precision);
  const Split split = resident_split(64 * 8);
  BatchLoader batches = loader(split, 64);
  RunPlan plan;
  plan.batches_per_epoch = 8;
  ProgressReporter progress(plan, 1, /*log_every=*/1000, /*printing=*/true);
  progress.start_epoch();
  torch::Tensor loss_sum = torch::zeros({2}, torch::TensorOptions().dtype(torch::kFloat64).device(gpu()));
  for (int step = 0; step < 8; ++step) {
    std::optional<SyncErrors> no_sync;
    if (step >= 3) no_sync.emplace();  // warm-up first: cuDNN autotuning, first allocations
    auto batch = batches.next();
    ASSERT_TRUE(batch.has_value());
    rig.start_step(lr_at(step));
    const torch::Tensor loss = rig.device_work(*batch);
    {
      torch::NoGradGuard no_grad;  // Trainer::record_batch
      loss_sum[0] += loss.detach().to(torch::kFloat64) * 64;
      loss_sum[1] += 64;
    }
    EXPECT_FALSE(progress.after_batch(0, step + 1, step + 1, 64 * (step + 1), loss).has_value());
  }
  const auto sums = loss_sum.cpu();
  EXPECT_EQ(sums[1].item<double>(), 8 * 64);
  EXPECT_TRUE(std::isfinite(sums[0].item<double>()));
}

TEST(SteadyStateStep, NoHostSyncEagerAdamFp32) {
  REQUIRE_ONE_GPU_RANK();
  EXPECT_NO_THROW(steady_state_has_no_sync("adam", false, Precision::Fp32));
}
TEST(SteadyStateStep, NoHostSyncFusedAdamBf16) {
  REQUIRE_ONE_GPU_RANK();
  EXPECT_NO_THROW(steady_state_has_no_sync("adam", true, Precision::Bf16));
}
TEST(SteadyStateStep, NoHostSyncFusedSgdFp32) {
  REQUIRE_ONE_GPU_RANK();
  EXPECT_NO_THROW(steady_state_has_no_sync("sgd", true, Precision::Fp32));
}

// The same batches through an eager rig and a graphed one: batch sizes
// 32 x 6 (3 warm-up, capture, 2 replays), 20 (partial: eager), 32 x 2 (replays).
TEST(CudaGraphStep, GraphedRunEqualsEagerRun) {
  REQUIRE_ONE_GPU_RANK();
  at::globalContext().setBenchmarkCuDNN(false);
  at::globalContext().setDeterministicCuDNN(true);
  MpiCommunicator control(test::env().comm());
  Rig eager("adam", true, Precision::Fp32), graphed("adam", true, Precision::Fp32);
  GraphedStep graph(gpu(), control, nccl());
  const Split split = resident_split(32 * 8 + 20);
  std::vector<int64_t> order;
  for (int64_t i = 0; i < split.images.size(0); ++i) order.push_back(i);
  torch::manual_seed(21);
  const std::vector<int64_t> sizes = {32, 32, 32, 32, 32, 32, 20, 32, 32};
  int64_t begin = 0;
  for (size_t step = 0; step < sizes.size(); ++step) {
    Batch b;
    const auto idx =
        torch::arange(begin, begin + sizes[step], torch::TensorOptions().dtype(torch::kLong).device(gpu()));
    b.images =
        normalize_batch(split.images.index_select(0, idx), Normalization::recipe(), torch::MemoryFormat::ChannelsLast);
    b.labels = split.labels.narrow(0, begin, sizes[step]).to(gpu());
    begin += sizes[step];
    // Step 7's rate is 0: the replay must leave the weights alone.
    const double lr = step == 7 ? 0.0 : lr_at(static_cast<int>(step));
    eager.start_step(lr);
    const torch::Tensor expected = eager.device_work(b);
    graphed.start_step(lr);
    const auto before = graphed.params[0].detach().clone();
    torch::Tensor loss;
    {
      std::optional<SyncErrors> no_sync;
      if (graph.captured()) no_sync.emplace();
      loss = graph.fits(b, 32) ? graph.run(b, [&](const Batch& s) { return graphed.device_work(s); })
                               : graphed.device_work(b);
    }
    EXPECT_EQ(graph.captured(), step >= 3) << step;
    EXPECT_EQ(loss.item<float>(), expected.item<float>()) << "step " << step;
    if (step == 7) {
      EXPECT_TRUE(torch::equal(before, graphed.params[0])) << "lr 0 replay changed the weights";
    }
  }
  for (size_t i = 0; i < eager.params.size(); ++i) {
    const double diff = (eager.params[i] - graphed.params[i]).abs().max().item<double>();
    EXPECT_EQ(diff, 0.0) << "parameter " << i;
  }
}

// NCCL's broadcast and all-gather inside a captured graph, at one rank: the
// replays must see each run's new input (the broadcast leaves its tensor
// as it is, the all-gather returns it as the only row).
TEST(CudaGraphStep, CapturesBroadcastAndAllGatherAtOneRank) {
  REQUIRE_ONE_GPU_RANK();
  MpiCommunicator control(test::env().comm());
  GraphedStep graph(gpu(), control, nccl());
  for (int step = 0; step < GraphedStep::kWarmupSteps + 3; ++step) {
    Batch b;
    b.images = torch::full({2, 3}, static_cast<float>(step + 1), torch::TensorOptions().device(gpu()));
    b.labels = torch::zeros({2}, torch::TensorOptions().dtype(torch::kLong).device(gpu()));
    const torch::Tensor out = graph.run(b, [](const Batch& s) {
      torch::Tensor t = s.images * 2;
      nccl().broadcast(t, 0);
      const torch::Tensor all = nccl().all_gather(t.flatten());
      return all.sum();
    });
    EXPECT_EQ(graph.captured(), step >= GraphedStep::kWarmupSteps) << step;
    EXPECT_EQ(out.item<float>(), 2.0F * static_cast<float>(step + 1) * 6) << "step " << step;
  }
}

}  // namespace
}  // namespace cifar
