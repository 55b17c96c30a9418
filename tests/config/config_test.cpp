// Configuration: defaults, INI + command line precedence, INI sections,
// enum values parsed once, registries in --help, and one clear error for
// unknown keys, wrong types and impossible values.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "comm/backends.hpp"
#include "config/train_config.hpp"
#include "data/dataset.hpp"
#include "model/model.hpp"
#include "train/optimizer.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

TrainConfig parse(std::vector<std::string> args) {
  args.insert(args.begin(), "cifar_mpi");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  return parse_config(static_cast<int>(argv.size()), argv.data());
}

std::string write_ini(const std::string& body) {
  char name[] = "/tmp/cifar_config_XXXXXX";
  const int fd = mkstemp(name);
  close(fd);
  std::ofstream(name) << body;
  return name;
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    return e.what();
  }
  return "no error";
}

TEST(Config, DefaultsAreTheRecipe) {
  const TrainConfig c = parse({});
  EXPECT_EQ(c.model.name, "convnet");
  EXPECT_EQ(c.optim.optimizer, "adam");
  EXPECT_DOUBLE_EQ(c.optim.lr, 1e-3);
  EXPECT_EQ(c.training.batch_size, 256);
  EXPECT_EQ(c.training.epochs, 10);
  EXPECT_EQ(c.training.seed, 0);
  EXPECT_EQ(c.data.shuffle_seed, 0);  // DistributedSampler's default, independent of --seed
  EXPECT_EQ(c.optim.schedule, ScheduleKind::Constant);
  EXPECT_EQ(c.training.precision, Precision::Fp32);
  EXPECT_EQ(c.checkpoint.resume.kind, ResumeRequest::Kind::None);
}

TEST(Config, CommandLineWinsOverFile) {
  const std::string ini = write_ini("epochs = 3\nlr = 0.01\nshuffle = false\n");
  const TrainConfig c = parse({"--config", ini, "--epochs", "5"});
  EXPECT_EQ(c.training.epochs, 5);
  EXPECT_DOUBLE_EQ(c.optim.lr, 0.01);
  EXPECT_FALSE(c.data.shuffle);
  std::remove(ini.c_str());
}

TEST(Config, EnumValuesAreParsedOnce) {
  const TrainConfig c = parse({"--schedule", "onecycle", "--device", "cpu", "--normalize", "dataset",
                               "--resume", "/tmp/x.pt", "--checkpoint-dir", "/tmp"});
  EXPECT_EQ(c.optim.schedule, ScheduleKind::OneCycle);
  EXPECT_EQ(c.runtime.device, DeviceRequest::Cpu);
  EXPECT_EQ(c.data.normalize, NormalizeKind::Dataset);
  EXPECT_EQ(c.checkpoint.resume.kind, ResumeRequest::Kind::Path);
  EXPECT_EQ(c.checkpoint.resume.path, "/tmp/x.pt");
  const std::string m = error_of({"--precision", "fp8"});
  EXPECT_NE(m.find("--precision"), std::string::npos) << m;
  EXPECT_NE(m.find("fp32, bf16, fp16"), std::string::npos) << m;
}

TEST(Config, IniSectionsAreOptionalAndChecked) {
  const std::string ini = write_ini("[training]\nepochs = 3\n[optim]\nlr = 0.01\n\n[data]\nshuffle = false\n");
  const TrainConfig c = parse({"--config", ini});
  EXPECT_EQ(c.training.epochs, 3);
  EXPECT_DOUBLE_EQ(c.optim.lr, 0.01);
  EXPECT_FALSE(c.data.shuffle);
  std::remove(ini.c_str());

  const std::string misplaced = write_ini("[data]\nepochs = 3\n");
  std::string m = error_of({"--config", misplaced});
  EXPECT_NE(m.find(misplaced + ":2"), std::string::npos) << m;
  EXPECT_NE(m.find("[training]"), std::string::npos) << m;
  std::remove(misplaced.c_str());

  const std::string unknown = write_ini("[trainign]\nepochs = 3\n");
  m = error_of({"--config", unknown});
  EXPECT_NE(m.find("trainign"), std::string::npos) << m;
  std::remove(unknown.c_str());
}

TEST(Config, ConfigMustBeASmallRegularFile) {
  EXPECT_NE(error_of({"--config", "/dev/zero"}).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of({"--config", "/tmp"}).find("not a regular file"), std::string::npos);
}

TEST(Config, LegacyLoaderThreadsStillWorks) {
  EXPECT_EQ(parse({"--loader-threads", "0"}).data.prefetch_batches, 0);
  EXPECT_EQ(parse({"--loader-threads", "1"}).data.prefetch_batches, TrainConfig{}.data.prefetch_batches);
}

TEST(Config, UnknownKeyInFileNamesFileAndKey) {
  const std::string ini = write_ini("epochs = 3\nlearning_rate = 0.1\n");
  const std::string m = error_of({"--config", ini});
  EXPECT_NE(m.find(ini), std::string::npos) << m;
  EXPECT_NE(m.find("learning_rate"), std::string::npos) << m;
  std::remove(ini.c_str());
}

TEST(Config, BadValues) {
  EXPECT_NE(error_of({"--batch-size", "0"}).find("--batch-size"), std::string::npos);
  EXPECT_NE(error_of({"--lr", "-0.1"}).find("--lr"), std::string::npos);
  EXPECT_NE(error_of({"--epochs", "two"}).find("epochs"), std::string::npos);
  EXPECT_NE(error_of({"--optimizer", "lamb"}).find("lamb"), std::string::npos);
  EXPECT_NE(error_of({"--model", "vgg"}).find("convnet"), std::string::npos);
  EXPECT_NE(error_of({"--backend", "gloo"}).find("mpi"), std::string::npos);
  EXPECT_NE(error_of({"--nesterov", "true"}).find("--nesterov"), std::string::npos);
  EXPECT_NE(error_of({"--no-such-option"}).find("no-such-option"), std::string::npos);
  EXPECT_NE(error_of({"--config", "/nonexistent/x.ini"}).find("/nonexistent/x.ini"), std::string::npos);
}

// Boost.Program_options expands %canonical_option% in its error messages
// until none is left, so an option holding that text hung the parser, memory
// growing (the config fuzz harness's finding, tests/fuzz/regression/config).
// Refused before Boost sees it, naming where it is.
TEST(Config, ParserPlaceholdersAreRefusedNotExpandedForever) {
  const std::string m = error_of({"--epochs", "2", "--co%canonical_option%mm-timeout"});
  EXPECT_NE(m.find("command-line argument 3 ('--co%canonical_option%mm-timeout') holds '%canonical_option%'"),
            std::string::npos) << m;
  EXPECT_NE(error_of({"--data", "x%value%.h5"}).find("holds '%value%'"), std::string::npos);
  const std::string ini = write_ini("epochs = 3\n%prefix_option% = 1\n");
  const std::string f = error_of({"--config", ini});
  EXPECT_NE(f.find("config file " + ini + ":2 holds '%prefix_option%'"), std::string::npos) << f;
  std::remove(ini.c_str());
  // A single % (Slurm-style names) is no placeholder.
  EXPECT_EQ(parse({"--metrics", "runs/%j/metrics.json"}).output.metrics, "runs/%j/metrics.json");
}

TEST(Config, HelpListsEveryOptionWithDefault) {
  const std::string h = config_help();
  for (const char* opt : {"--data", "--model", "--epochs", "--max-steps", "--batch-size", "--optimizer", "--lr",
                          "--schedule", "--seed", "--shuffle", "--augment", "--backend", "--bucket-mb", "--output",
                          "--metrics"})
    EXPECT_NE(h.find(opt), std::string::npos) << opt;
  EXPECT_NE(h.find("(=0.001)"), std::string::npos) << h;
}

TEST(Config, HelpGroupsOptionsBySection) {
  const std::string h = config_help();
  for (const char* section : {"[data]", "[model]", "[training]", "[optim]", "[comm]", "[runtime]", "[checkpoint]",
                              "[output]"})
    EXPECT_NE(h.find(section), std::string::npos) << section;
  EXPECT_LT(h.find("[data]"), h.find("--shuffle-seed"));
  EXPECT_LT(h.find("--shuffle-seed"), h.find("[model]"));
}

// Registering a model, optimiser, backend or dataset is enough for --help to
// list it and for the parser to accept it (docs/extending.md).
TEST(Config, HelpListsEveryRegisteredName) {
  const std::string h = config_help();
  for (const auto& names : {model_names(), optimizer_names(), backend_names(), dataset_names()}) {
    ASSERT_FALSE(names.empty());
    for (const auto& name : names) EXPECT_NE(h.find(name), std::string::npos) << name << " missing from --help";
  }
  for (const auto& name : model_names()) EXPECT_EQ(parse({"--model", name}).model.name, name);
  for (const auto& name : optimizer_names()) EXPECT_EQ(parse({"--optimizer", name}).optim.optimizer, name);
}

}  // namespace
}  // namespace cifar
