// Configuration: defaults, INI + command line precedence, and one clear error
// for unknown keys, wrong types and impossible values.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "config/train_config.hpp"
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
  EXPECT_EQ(c.model, "convnet");
  EXPECT_EQ(c.optimizer, "adam");
  EXPECT_DOUBLE_EQ(c.lr, 1e-3);
  EXPECT_EQ(c.batch_size, 256);
  EXPECT_EQ(c.epochs, 10);
  EXPECT_EQ(c.seed, 0);
  EXPECT_EQ(c.shuffle_seed, 0);  // DistributedSampler's default, independent of --seed
}

TEST(Config, CommandLineWinsOverFile) {
  const std::string ini = write_ini("epochs = 3\nlr = 0.01\nshuffle = false\n");
  const TrainConfig c = parse({"--config", ini, "--epochs", "5"});
  EXPECT_EQ(c.epochs, 5);
  EXPECT_DOUBLE_EQ(c.lr, 0.01);
  EXPECT_FALSE(c.shuffle);
  std::remove(ini.c_str());
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
  EXPECT_NE(error_of({"--no-such-option"}).find("no-such-option"), std::string::npos);
  EXPECT_NE(error_of({"--config", "/nonexistent/x.ini"}).find("/nonexistent/x.ini"), std::string::npos);
}

TEST(Config, HelpListsEveryOptionWithDefault) {
  const std::string h = config_help();
  for (const char* opt : {"--data", "--model", "--epochs", "--max-steps", "--batch-size", "--optimizer", "--lr",
                          "--schedule", "--seed", "--shuffle", "--augment", "--backend", "--bucket-mb", "--output",
                          "--metrics"})
    EXPECT_NE(h.find(opt), std::string::npos) << opt;
  EXPECT_NE(h.find("(=0.001)"), std::string::npos) << h;
}

}  // namespace
}  // namespace cifar
