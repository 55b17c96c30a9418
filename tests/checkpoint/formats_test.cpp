// Every format version still reads: a committed file of each version
// (tests/checkpoint/formats/format-<N>.pt, their origins in
// tests/checkpoint/formats/README.md) decodes to its known contents, what an
// older version lacks follows from the rest, and it restores into the run
// that wrote it (the fuzz harness's tiny model, SGD).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "checkpoint/checkpoint.hpp"
#include "model/model.hpp"
#include "optim/lookahead.hpp"
#include "optim/optimizer.hpp"
#include "process/rng_state.hpp"
#include "step/precision.hpp"
#include "tiny_model.hpp"  // tests/fuzz: the model that wrote the files

namespace cifar {
namespace {

std::string format_file(int version) {
  return std::string(CIFAR_CHECKPOINT_FORMATS_DIR) + "/format-" + std::to_string(version) + ".pt";
}

class FormatVersion : public ::testing::TestWithParam<int> {};

TEST_P(FormatVersion, ReadsItsKnownContentsAndRestores) {
  const std::string path = format_file(GetParam());
  const Checkpoint c = read_checkpoint(path);
  EXPECT_EQ(c.run.model, "tiny");
  EXPECT_EQ(c.run.optimizer, "sgd");
  EXPECT_EQ(c.run.world_size, 1);
  EXPECT_EQ(c.run.batch_size, 2);
  EXPECT_EQ(c.run.accumulate, 1);
  EXPECT_EQ(c.run.train_size, 16);
  EXPECT_EQ(c.position.epoch, 1);
  EXPECT_EQ(c.position.batch_in_epoch, 3);
  EXPECT_EQ(c.position.step, 11);
  // Recorded from version 2 (global position, order world size) and 3 (the
  // rest); derived from the run's own shape before.
  EXPECT_EQ(c.global_position, 6);
  EXPECT_EQ(c.position.order_world_size, 1);
  EXPECT_EQ(c.position.order_batch_size, 2);
  EXPECT_EQ(c.position.batch_origin, 0);
  EXPECT_EQ(c.run.lr_global_batch, 2);
  EXPECT_FALSE(c.run.reshaped);
  EXPECT_EQ(c.epoch_loss_sum, 12.5);
  EXPECT_EQ(c.epoch_loss_count, 6);
  EXPECT_EQ(c.skipped_steps, 0);
  EXPECT_FALSE(c.run.config.empty());
  // The run's totals from version 4 (a fresh run's); older files leave them to their owner record.
  ASSERT_EQ(c.totals.has_value(), GetParam() >= 4);
  if (c.totals) {
    EXPECT_EQ(c.totals->train_seconds, 0);
    EXPECT_EQ(c.totals->test_accuracy, -1);
    EXPECT_EQ(c.totals->time_to_target, -1);
  }
  EXPECT_EQ(c.parts.at(std::string(LossScaler::kScaleKey)).toDouble(), 65536.0);
  EXPECT_FALSE(c.parts.contains(std::string(Lookahead::kAverageKey)));
  EXPECT_FALSE(c.parts.contains(std::string(DefaultGenerators::kDeviceKey)));
  const at::Tensor weight = c.model_state.toGenericDict().at(std::string("fc.weight")).toTensor();
  ASSERT_EQ(weight.sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(weight[0][0].item<float>(), 0.30355072021484375f);

  test::TinyModel model;
  OptimConfig o;
  o.optimizer = "sgd";
  Optimizer optimizer(o, model.parameter_groups());
  LossScaler scaler(false);
  TrainState state{model, optimizer.torch_optimizer(), scaler, torch::kCPU};
  restore_checkpoint(c, path, state);
  EXPECT_EQ(model.named_parameters()["fc.weight"][0][0].item<float>(), 0.30355072021484375f);
  EXPECT_EQ(scaler.current_scale(), 65536.0);
}
INSTANTIATE_TEST_SUITE_P(CheckpointFormats, FormatVersion, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace cifar
