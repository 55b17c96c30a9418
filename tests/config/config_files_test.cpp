// Every config/*.ini of the repository parses and validates, names a model
// the registry knows, and default.ini is the PyTorch DDP recipe. Installed
// configs are found by name; $CIFAR_DATA sits between the command line and
// the file.
#include <gtest/gtest.h>

#include <fstream>

#include "app/registries.hpp"
#include "config/run_config.hpp"
#include "model/model.hpp"
#include "support/scoped_env.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

using test::ScopedEnv;

RunConfig parse_args(std::vector<const char*> args) {
  args.insert(args.begin(), "cifar_mpi");
  return parse_config(static_cast<int>(args.size()), args.data(), registered_names());
}

RunConfig parse_file(const std::string& path) {
  ScopedEnv env({{"CIFAR_DATA", std::nullopt}});  // the file's own data path
  return parse_args({"--config", path.c_str()});
}

const std::string kConfigDir = CIFAR_CONFIG_DIR;

TEST(ConfigFiles, EveryFileParsesNamesAKnownModelAndSetsOnlyWhatActs) {
  int files = 0;
  for (const std::string& name : paths::list(kConfigDir)) {
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".ini") != 0) continue;
    ++files;
    const std::string path = paths::join(kConfigDir, name);
    SCOPED_TRACE(path);
    RunConfig c;
    ASSERT_NO_THROW(c = parse_file(path));
    EXPECT_NO_THROW(make_model(c.model.name));
    EXPECT_TRUE(c.inert_options.empty()) << c.inert_options.front();  // a shipped file sets only what acts
  }
  EXPECT_GE(files, 3);
}

// The built-in defaults are the recipe (config_test.cpp checks that);
// default.ini spells them out and differs only in where metrics go and in
// OpenBLAS's pool.
TEST(ConfigFiles, DefaultIsTheReferenceRecipe) {
  RunConfig from_file = parse_file(paths::join(kConfigDir, "default.ini"));
  EXPECT_EQ(from_file.output.metrics, "runs/metrics.jsonl");
  EXPECT_EQ(from_file.runtime.blas_threads, -1) << "the recipe's OpenBLAS pool, for its exact rounding";
  EXPECT_EQ(from_file.training.precision, Precision::Fp32) << "the recipe trains in fp32 on every machine";
  from_file.output.metrics = RunConfig{}.output.metrics;
  from_file.runtime.blas_threads = RunConfig{}.runtime.blas_threads;
  from_file.config_file.clear();
  EXPECT_EQ(from_file.describe(), RunConfig{}.describe());
}

// e1_cpu.ini lets the machine choose its precision and trains one epoch
// more where that is bf16: 8.75 epochs (280 steps of 32) in fp32, 9.75 in
// bf16 (312), as measured side by side with the peer in each.
TEST(ConfigFiles, CpuRecordChoosesItsPrecisionAndTrainsOneEpochMoreInBf16) {
  const RunConfig c = parse_file(paths::join(kConfigDir, "e1_cpu.ini"));
  EXPECT_EQ(c.training.precision, Precision::Auto);
  const TrainingConfig fp32 = trained_length(c.training, Precision::Fp32);
  EXPECT_EQ(fp32.epochs, 9);
  EXPECT_EQ(fp32.max_steps, 280);
  const TrainingConfig bf16 = trained_length(c.training, Precision::Bf16);
  EXPECT_EQ(bf16.epochs, 10);
  EXPECT_EQ(bf16.max_steps, 312);
}

TEST(ConfigFiles, SmokeIsTinyOnSyntheticData) {
  const RunConfig c = parse_file(paths::join(kConfigDir, "smoke.ini"));
  EXPECT_EQ(c.training.epochs, 1);
  EXPECT_EQ(c.training.max_steps, 20);
  EXPECT_EQ(c.training.batch_size, 32);
  EXPECT_EQ(c.data.path, "data/synthetic.h5");
}

TEST(ConfigFiles, ResNet18UsesNesterovSgdWithAugmentation) {
  const RunConfig c = parse_file(paths::join(kConfigDir, "resnet18.ini"));
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

// e1.ini is speed94_muon.ini with the record's pieces: the resolution
// schedule, the global max-pool head, the low-rate tail and its average.
TEST(ConfigFiles, E1IsTheHivergeRecipeWithTheRecordsPieces) {
  const RunConfig c = parse_file(paths::join(kConfigDir, "e1.ini"));
  const RunConfig hiverge = parse_file(paths::join(kConfigDir, "speed94_muon.ini"));
  EXPECT_EQ(c.model.name, hiverge.model.name);
  EXPECT_EQ(c.model.head, HeadKind::GlobalMax);
  EXPECT_EQ(c.data.resolution.text(), "24:3,28:3,32");
  EXPECT_EQ(c.training.global_batch_size, 1536);
  EXPECT_EQ(c.training.max_steps, 284) << "ceil(8.875 x 32)";
  EXPECT_DOUBLE_EQ(c.optim.lr_tail_epochs, 0.375) << "the decay ends at ceil(8.5 x 32) = 272";
  EXPECT_DOUBLE_EQ(c.optim.lr_floor, 0.05);
  EXPECT_DOUBLE_EQ(c.optim.muon_lr, 0.2255);
  EXPECT_EQ(c.optim.lookahead_every, 4);
  EXPECT_DOUBLE_EQ(c.optim.lookahead_decay, 0.7);
  EXPECT_EQ(c.optim.lookahead_last_steps, 20) << "8 steps before the decay's end";
  EXPECT_EQ(c.training.tta, TtaMode::MirrorTranslate) << "the record harness's grader: 1/4, 1/4, 1/8 x 4";
  EXPECT_DOUBLE_EQ(c.training.tta_fraction, 1.0) << "the harness's six views for every test image";
  EXPECT_DOUBLE_EQ(c.optim.lr, hiverge.optim.lr);
  EXPECT_DOUBLE_EQ(c.data.brightness_jitter, hiverge.data.brightness_jitter);
}

// e1_cpu.ini is E1 with a fourth 24 px epoch and 4 steps fewer: the
// resolution schedule and the step count differ, every other piece is E1's.
TEST(ConfigFiles, E1CpuIsE1WithAFourth24PxEpochAndFourStepsFewer) {
  const RunConfig c = parse_file(paths::join(kConfigDir, "e1_cpu.ini"));
  const RunConfig e1 = parse_file(paths::join(kConfigDir, "e1.ini"));
  EXPECT_EQ(c.data.resolution.text(), "24:4,28:3,32");
  EXPECT_EQ(c.training.max_steps, 280) << "8.75 epochs of 32 steps";
  EXPECT_EQ(c.model.name, e1.model.name);
  EXPECT_EQ(c.model.head, e1.model.head);
  EXPECT_EQ(c.training.epochs, e1.training.epochs);
  EXPECT_EQ(c.training.global_batch_size, e1.training.global_batch_size);
  EXPECT_DOUBLE_EQ(c.training.label_smoothing, e1.training.label_smoothing);
  EXPECT_EQ(c.training.tta, e1.training.tta);
  EXPECT_DOUBLE_EQ(c.optim.lr, e1.optim.lr);
  EXPECT_DOUBLE_EQ(c.optim.muon_lr, e1.optim.muon_lr);
  EXPECT_DOUBLE_EQ(c.optim.lr_tail_epochs, e1.optim.lr_tail_epochs);
  EXPECT_DOUBLE_EQ(c.optim.lr_floor, e1.optim.lr_floor);
  EXPECT_EQ(c.optim.lookahead_every, e1.optim.lookahead_every);
  EXPECT_DOUBLE_EQ(c.optim.lookahead_decay, e1.optim.lookahead_decay);
  EXPECT_EQ(c.optim.lookahead_last_steps, e1.optim.lookahead_last_steps);
  EXPECT_DOUBLE_EQ(c.data.brightness_jitter, e1.data.brightness_jitter);
  EXPECT_DOUBLE_EQ(c.data.contrast_jitter, e1.data.contrast_jitter);
}

// quick.ini keeps the recipe's network and data and changes only how it is
// trained: a smaller global batch, one-cycle Adam, label smoothing.
TEST(ConfigFiles, QuickTrainsTheRecipeNetworkOnAOneCycleSchedule) {
  const RunConfig c = parse_file(paths::join(kConfigDir, "quick.ini"));
  const RunConfig recipe;
  EXPECT_EQ(c.model.name, recipe.model.name);
  EXPECT_EQ(c.data.normalize, recipe.data.normalize);
  EXPECT_FALSE(c.data.augment);
  EXPECT_EQ(c.training.global_batch_size, 128);
  EXPECT_EQ(c.optim.optimizer, "adam");
  EXPECT_EQ(c.optim.schedule, ScheduleKind::OneCycle);
  EXPECT_GT(c.optim.lr, recipe.optim.lr);
  EXPECT_DOUBLE_EQ(c.training.label_smoothing, 0.1);
  EXPECT_LT(c.training.epochs, recipe.training.epochs);
}

TEST(InstalledConfigs, FoundByNameWithOrWithoutIni) {
  const std::vector<std::string> folders = {"/nonexistent/share/cifar_mpi/config", kConfigDir};
  EXPECT_EQ(resolve_config_file("default", folders), paths::join(kConfigDir, "default.ini"));
  EXPECT_EQ(resolve_config_file("smoke.ini", folders), paths::join(kConfigDir, "smoke.ini"));
  // Paths are taken as given, existing or not (reading them reports what is wrong).
  EXPECT_EQ(resolve_config_file("elsewhere/default", folders), "elsewhere/default");
  const std::string here = paths::join(kConfigDir, "resnet18.ini");
  EXPECT_EQ(resolve_config_file(here, {}), here);
}

// A folder of known configs (not the repository's, which grows): the message
// lists the .ini files by name, sorted, and nothing else.
TEST(InstalledConfigs, AnUnknownNameListsTheFoldersAndTheirConfigs) {
  const std::string folder = paths::make_temp_directory("cifar-configs-");
  for (const char* name : {"zeta.ini", "alpha.ini", "notes.txt"}) std::ofstream(paths::join(folder, name)) << "\n";
  try {
    resolve_config_file("defualt", {"/nonexistent", folder});
    FAIL() << "no such config";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--config: cannot open 'defualt': no such file here, and no installed config of that name "
                     "(searched /nonexistent, " +
                     folder + "; configs there: alpha, zeta)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("set CIFAR_MPI_HOME"), std::string::npos) << m;
  }
  paths::remove_all(folder);
}

// An install prefix with one config, as `cmake --install` lays it out.
struct FakePrefix {
  std::string root = paths::make_temp_directory("cifar-prefix-");
  FakePrefix() {
    const std::string folder = paths::join(root, kInstalledConfigDir);
    EXPECT_EQ(paths::create_directories(folder), "");
    std::ofstream(paths::join(folder, "default.ini")) << "[data]\ndata = data/cifar10.h5\n[training]\nepochs = 3\n";
  }
  ~FakePrefix() { paths::remove_all(root); }
};

TEST(InstalledConfigs, CifarMpiHomeComesFirst) {
  FakePrefix prefix;
  ScopedEnv env({{"CIFAR_MPI_HOME", prefix.root}, {"CIFAR_DATA", std::nullopt}});
  const auto folders = config_folders();
  ASSERT_GE(folders.size(), 2u) << "$CIFAR_MPI_HOME's and the program's";
  EXPECT_EQ(folders[0], paths::join(prefix.root, "share/cifar_mpi/config"));
  EXPECT_EQ(folders[1], paths::join(paths::parent(paths::parent(paths::executable())), "share/cifar_mpi/config"));
  const RunConfig c = parse_args({"--config", "default"});
  EXPECT_EQ(c.config_file, paths::join(folders[0], "default.ini"));
  EXPECT_EQ(c.training.epochs, 3);
}

TEST(InstalledConfigs, CifarDataIsBelowTheCommandLineAndAboveTheFile) {
  FakePrefix prefix;
  const std::string file = paths::join(paths::join(prefix.root, kInstalledConfigDir), "default.ini");
  {
    ScopedEnv env(ScopedEnv::Values{{"CIFAR_DATA", "/scratch/cifar10.h5"}});
    EXPECT_EQ(parse_args({"--config", file.c_str()}).data.path, "/scratch/cifar10.h5");
    EXPECT_EQ(parse_args({"--config", file.c_str(), "--data", "mine.h5"}).data.path, "mine.h5");
    EXPECT_EQ(parse_args({}).data.path, "/scratch/cifar10.h5");
  }
  ScopedEnv unset(ScopedEnv::Values{{"CIFAR_DATA", ""}});  // empty: as unset
  EXPECT_EQ(parse_args({"--config", file.c_str()}).data.path, "data/cifar10.h5");
}

}  // namespace
}  // namespace cifar
