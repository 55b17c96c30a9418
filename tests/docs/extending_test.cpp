// docs/extending.md's four recipes, built from the page itself
// (extract_examples.py) into registries like the production ones: each
// example registers beside the parts already there, and works.
#include <gtest/gtest.h>

#include <algorithm>

#include "comm/counting_communicator.hpp"
#include "docs/registries_with_recipes.hpp"
#include "model/tiny.hpp"
#include "optim/optimizer.hpp"
#include "pack/cifar_binary.hpp"
#include "pack/synthetic.hpp"
#include "support/mpi_test_env.hpp"
#include "support/temp_folder.hpp"

namespace cifar {
namespace {

// The production names followed by the recipe's: registering appends and
// changes nothing before it.
std::vector<std::string> with(std::vector<std::string> names, const std::string& added) {
  EXPECT_EQ(std::count(names.begin(), names.end(), added), 0) << added << " is registered already";
  names.push_back(added);
  return names;
}

TEST(ExtendingModel, RegistersAndGivesTenLogits) {
  EXPECT_EQ(docs_example::model_names(), with(model_names(), "tiny"));
  torch::manual_seed(0);
  auto model = docs_example::make_model("tiny");
  ASSERT_NE(dynamic_cast<TinyNet*>(model.get()), nullptr);
  const torch::Tensor x = torch::randn({4, 3, 32, 32});
  const torch::Tensor logits = model->forward(x);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{4, cifar10::kNumClasses}));
  EXPECT_TRUE(torch::allclose(model->forward(x.contiguous(at::MemoryFormat::ChannelsLast)), logits, 1e-5, 1e-6));
  logits.sum().backward();  // every parameter gets a gradient, as the reducer requires
  for (const auto& p : model->parameters()) EXPECT_TRUE(p.grad().defined());
  std::vector<std::string> names;
  for (const auto& e : state_entries(*model)) names.push_back(e.first);
  EXPECT_EQ(names, (std::vector<std::string>{"conv.weight", "conv.bias", "fc.weight", "fc.bias"}));
  // Two models from one seed are the same model, as on every rank.
  torch::manual_seed(0);
  auto again = docs_example::make_model("tiny");
  EXPECT_TRUE(torch::equal(again->forward(x), logits));
}

class ExtendingDataset : public test::TempFolderTest {};

TEST_F(ExtendingDataset, RegistersAndReadsTheBinaryRelease) {
  EXPECT_EQ(docs_example::dataset_names(), with(dataset_names(), "cifar10-binary"));
  if (test::env().world().rank != 0) GTEST_SKIP() << "rank 0 reads the 180 MB release for all";
  const CifarData data = make_synthetic_cifar(50000, 10000, 7);
  write_cifar10_binary(data, root_);
  DataConfig config;
  config.dataset = "cifar10-binary";
  config.path = root_;
  const Dataset d = docs_example::load_dataset(config, SplitRequest{});
  ASSERT_EQ(d.train.size(), 50000);
  ASSERT_EQ(d.test.size(), 10000);
  EXPECT_EQ(d.train.images.sizes(), (std::vector<int64_t>{50000, 3, 32, 32}));
  EXPECT_EQ(d.train.labels.scalar_type(), torch::kInt64);
  for (int64_t i : {0, 1, 49999}) {
    EXPECT_EQ(d.train.labels[i].item<int64_t>(), data.train.labels[i]);
    EXPECT_EQ(d.train.images[i][2][31][31].item<uint8_t>(), data.train.images[i * 3072 + 3071]);
  }
  EXPECT_EQ(d.test.labels[9999].item<int64_t>(), data.test.labels[9999]);
  const ChannelStats stats = compute_channel_stats(data.train);
  EXPECT_EQ(d.train.info.mean, stats.mean);
  EXPECT_EQ(d.train.info.std, stats.std);
  EXPECT_EQ(d.train.info.count, 50000);
  EXPECT_FALSE(d.identity.empty());

  // Only the test split's images: the training split keeps its statistics.
  const Dataset eval = docs_example::load_dataset(config, SplitRequest{false, true});
  EXPECT_EQ(eval.train.size(), 0);
  EXPECT_EQ(eval.train.info.count, 50000);
  EXPECT_EQ(eval.train.info.mean, stats.mean);
  EXPECT_EQ(eval.test.size(), 10000);

  config.path = at("missing");
  EXPECT_THROW(docs_example::load_dataset(config, SplitRequest{}), DataError);
}

TEST(ExtendingOptimizer, RegistersAndMinimises) {
  EXPECT_EQ(docs_example::optimizer_names(), with(optimizer_names(), "rmsprop"));
  EXPECT_FALSE(docs_example::optimizer_supports_nesterov("rmsprop"));
  OptimConfig config;
  config.optimizer = "rmsprop";
  config.lr = 0.01;
  config.momentum = 0.0;
  // Two groups: the second with a zero learning-rate multiplier must not move.
  const torch::Tensor target = torch::tensor({1.0f, -2.0f, 3.0f});
  ParameterGroup moving{"moving", {torch::zeros({3}, torch::requires_grad())}};
  ParameterGroup frozen{"frozen", {torch::zeros({3}, torch::requires_grad())}, /*lr_scale=*/0.0};
  auto optimizer = docs_example::make_optimizer(config, {moving, frozen});
  ASSERT_NE(dynamic_cast<torch::optim::RMSprop*>(optimizer.get()), nullptr);
  ASSERT_EQ(optimizer->param_groups().size(), 2u);
  for (int step = 0; step < 1000; ++step) {
    optimizer->zero_grad();
    const torch::Tensor loss =
        (moving.parameters[0] - target).pow(2).sum() + (frozen.parameters[0] - target).pow(2).sum();
    loss.backward();
    optimizer->step();
  }
  EXPECT_TRUE(torch::allclose(moving.parameters[0], target, 0, 0.05)) << moving.parameters[0];
  EXPECT_TRUE(torch::equal(frozen.parameters[0], torch::zeros({3})));
  EXPECT_DOUBLE_EQ(optimizer->param_groups()[0].options().get_lr(), 0.01);
}

TEST(ExtendingCommunicator, RegistersAndReduces) {
  EXPECT_EQ(docs_example::backend_names(), with(backend_names(), "counted-mpi"));
  Machine cpus;
  EXPECT_EQ(docs_example::auto_backend(cpus, DeviceRequest::Auto), "mpi");  // auto never picks it
  const World& world = test::env().world();
  const torch::Device device = docs_example::place("counted-mpi", world, DeviceRequest::Auto, cpus);
  EXPECT_TRUE(device.is_cpu());
  auto comm = docs_example::make_communicator("counted-mpi", test::env().comm(), device, std::chrono::seconds(60));
  auto* counted = dynamic_cast<CountingCommunicator*>(comm.get());
  ASSERT_NE(counted, nullptr);
  EXPECT_EQ(comm->name(), "counted-mpi");
  EXPECT_EQ(comm->rank(), world.rank);
  EXPECT_EQ(comm->size(), world.size);
  EXPECT_EQ(comm->timeout(), std::chrono::seconds(60));

  const int n = world.size;
  torch::Tensor sum = torch::full({5}, world.rank + 1.0f);
  comm->all_reduce(sum, ReduceOp::Sum);
  EXPECT_TRUE(torch::equal(sum, torch::full({5}, n * (n + 1) / 2.0f)));
  torch::Tensor average = torch::full({3}, static_cast<double>(world.rank), torch::kFloat64);
  comm->all_reduce_async(average, ReduceOp::Average, "average")->wait();
  EXPECT_TRUE(torch::allclose(average, torch::full({3}, (n - 1) / 2.0, torch::kFloat64)));
  torch::Tensor root = torch::full({2}, static_cast<int64_t>(world.rank == 0 ? 42 : -1), torch::kInt64);
  comm->broadcast(root, 0);
  EXPECT_TRUE(torch::equal(root, torch::full({2}, 42, torch::kInt64)));
  const torch::Tensor gathered = comm->all_gather(torch::full({2}, static_cast<float>(world.rank)));
  EXPECT_EQ(gathered.sizes(), (std::vector<int64_t>{n, 2}));
  for (int r = 0; r < n; ++r) EXPECT_EQ(gathered[r][1].item<float>(), r);
  comm->barrier();
  EXPECT_EQ(counted->collectives(), 5);
}

}  // namespace
}  // namespace cifar
