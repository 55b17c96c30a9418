// Every config/*.ini of the repository parses and validates, names a model
// the registry knows, and default.ini is the reference recipe.
#include <gtest/gtest.h>

#include "config/train_config.hpp"
#include "model/model.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

TrainConfig parse_file(const std::string& path) {
  const char* argv[] = {"cifar_mpi", "--config", path.c_str()};
  return parse_config(3, argv);
}

const std::string kConfigDir = CIFAR_CONFIG_DIR;

TEST(ConfigFiles, EveryFileParsesAndNamesAKnownModel) {
  int files = 0;
  for (const std::string& name : paths::list(kConfigDir)) {
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".ini") != 0) continue;
    ++files;
    const std::string path = paths::join(kConfigDir, name);
    SCOPED_TRACE(path);
    TrainConfig c;
    ASSERT_NO_THROW(c = parse_file(path));
    EXPECT_NO_THROW(make_model(c.model.name));
  }
  EXPECT_GE(files, 3);
}

// The built-in defaults are the recipe (config_test.cpp checks that);
// default.ini spells them out and differs only in where metrics go and in
// OpenBLAS's pool.
TEST(ConfigFiles, DefaultIsTheReferenceRecipe) {
  TrainConfig from_file = parse_file(paths::join(kConfigDir, "default.ini"));
  EXPECT_EQ(from_file.output.metrics, "runs/metrics.jsonl");
  EXPECT_EQ(from_file.runtime.blas_threads, -1) << "the recipe's OpenBLAS pool, for its exact rounding";
  from_file.output.metrics = TrainConfig{}.output.metrics;
  from_file.runtime.blas_threads = TrainConfig{}.runtime.blas_threads;
  from_file.config_file.clear();
  EXPECT_EQ(from_file.describe(), TrainConfig{}.describe());
}

TEST(ConfigFiles, SmokeIsTinyOnSyntheticData) {
  const TrainConfig c = parse_file(paths::join(kConfigDir, "smoke.ini"));
  EXPECT_EQ(c.training.epochs, 1);
  EXPECT_EQ(c.training.max_steps, 20);
  EXPECT_EQ(c.training.batch_size, 32);
  EXPECT_EQ(c.data.path, "data/synthetic.h5");
}

TEST(ConfigFiles, ResNet18UsesNesterovSgdWithAugmentation) {
  const TrainConfig c = parse_file(paths::join(kConfigDir, "resnet18.ini"));
  EXPECT_EQ(c.model.name, "resnet18");
  EXPECT_EQ(c.optim.optimizer, "sgd");
  EXPECT_TRUE(c.optim.nesterov);
  EXPECT_DOUBLE_EQ(c.optim.momentum, 0.9);
  EXPECT_DOUBLE_EQ(c.optim.lr, 0.1);
  EXPECT_DOUBLE_EQ(c.optim.weight_decay, 5e-4);
  EXPECT_EQ(c.optim.schedule, ScheduleKind::OneCycle);
  EXPECT_TRUE(c.data.augment);
  EXPECT_EQ(c.training.batch_size, 128);
}

}  // namespace
}  // namespace cifar
