// Configuration: defaults, INI + command line precedence, INI sections,
// enum values parsed once, registries in --help, and one clear error for
// unknown keys, wrong types and impossible values.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "app/registries.hpp"
#include "comm/backends.hpp"
#include "config/run_config.hpp"
#include "data/dataset.hpp"
#include "model/model.hpp"
#include "optim/optimizer.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

RunConfig parse(std::vector<std::string> args) {
  args.insert(args.begin(), "cifar_mpi");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  return parse_config(static_cast<int>(argv.size()), argv.data(), registered_names());
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
  const RunConfig c = parse({});
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

// Options given that the rest of the configuration leaves without effect are
// named, whether from the command line or the file; defaults never are.
TEST(Config, OptionsWithoutEffectAreNamed) {
  EXPECT_TRUE(parse({}).inert_options.empty());
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> rows = {
      {{"--tta-fraction", "0.5"}, {"--tta-fraction has no effect without --tta (it is none)"}},
      {{"--tta-fraction", "0.5", "--tta", "mirror"}, {}},
      {{"--tta", "mirror", "--eval", "false"}, {"--tta has no effect with --eval false (nothing is evaluated)"}},
      {{"--eval-every-epochs", "2", "--eval", "false"},
       {"--eval-every-epochs has no effect with --eval false (nothing is evaluated)"}},
      {{"--optimizer", "sgd", "--muon-lr", "0.1", "--muon-matrices", "true"},
       {"--muon-lr has no effect without --optimizer muon (it is sgd)",
        "--muon-matrices has no effect without --optimizer muon (it is sgd)"}},
      {{"--brightness-jitter", "0.1"}, {"--brightness-jitter has no effect without --augment true"}},
      {{"--brightness-jitter", "0.1", "--augment", "true"}, {}},
      {{"--optimizer", "muon", "--fused-optimizer", "true"},
       {"--fused-optimizer has no effect with --optimizer muon, which has no fused form"}},
      {{"--optimizer", "adam", "--fused-optimizer", "true"}, {}},
  };
  for (const auto& [args, notes] : rows) EXPECT_EQ(parse(args).inert_options, notes) << args.front();
  const std::string ini = write_ini("contrast-jitter = 0.2\n");
  EXPECT_EQ(parse({"--config", ini}).inert_options,
            std::vector<std::string>{"--contrast-jitter has no effect without --augment true"});
  std::remove(ini.c_str());
}

TEST(Config, CommandLineWinsOverFile) {
  const std::string ini = write_ini("epochs = 3\nlr = 0.01\nshuffle = false\n");
  const RunConfig c = parse({"--config", ini, "--epochs", "5"});
  EXPECT_EQ(c.training.epochs, 5);
  EXPECT_DOUBLE_EQ(c.optim.lr, 0.01);
  EXPECT_FALSE(c.data.shuffle);
  std::remove(ini.c_str());
}

TEST(Config, EnumValuesAreParsedOnce) {
  const RunConfig c = parse({"--schedule", "onecycle", "--device", "cpu", "--normalize", "dataset", "--resume",
                             "/tmp/x.pt", "--checkpoint-dir", "/tmp"});
  EXPECT_EQ(c.optim.schedule, ScheduleKind::OneCycle);
  EXPECT_EQ(c.runtime.device, DeviceRequest::Cpu);
  EXPECT_EQ(c.data.normalize, NormalizeKind::Dataset);
  EXPECT_EQ(c.checkpoint.resume.kind, ResumeRequest::Kind::Path);
  EXPECT_EQ(c.checkpoint.resume.path, "/tmp/x.pt");
  const std::string m = error_of({"--precision", "fp8"});
  EXPECT_NE(m.find("--precision"), std::string::npos) << m;
  EXPECT_NE(m.find("fp32, bf16, fp16"), std::string::npos) << m;
}

// --resolution-schedule: size:epochs entries and a last size alone; the
// size of each epoch; every malformed spec refused naming the option.
// auto is parsed as the others are; the run resolves it (step/precision_choice.hpp).
TEST(Config, PrecisionAutoIsParsed) {
  EXPECT_EQ(parse({"--precision", "auto"}).training.precision, Precision::Auto);
  EXPECT_EQ(parse({}).training.precision, Precision::Fp32);
}

// --bf16-epochs and --bf16-max-steps are the run's length in bf16 only (given
// or auto's choice); 0 keeps the length of every precision.
TEST(Config, Bf16LengthAppliesInBf16Only) {
  const RunConfig c = parse({"--epochs", "3", "--max-steps", "20", "--bf16-epochs", "5", "--bf16-max-steps", "40"});
  for (const Precision other : {Precision::Fp32, Precision::Fp16}) {
    EXPECT_EQ(trained_length(c.training, other).epochs, 3);
    EXPECT_EQ(trained_length(c.training, other).max_steps, 20);
    EXPECT_EQ(trained_length_note(c.training, other), "");
  }
  const TrainingConfig bf16 = trained_length(c.training, Precision::Bf16);
  EXPECT_EQ(bf16.epochs, 5);
  EXPECT_EQ(bf16.max_steps, 40);
  EXPECT_EQ(trained_length(bf16, Precision::Bf16).epochs, 5) << "applied twice, the same length";
  EXPECT_EQ(trained_length_note(c.training, Precision::Bf16),
            "length in bf16: 5 epochs, at most 40 optimiser steps (bf16-epochs, bf16-max-steps)");
  const RunConfig epochs_only = parse({"--epochs", "3", "--max-steps", "20", "--bf16-epochs", "5"});
  EXPECT_EQ(trained_length(epochs_only.training, Precision::Bf16).max_steps, 20) << "0: as --max-steps";
  const RunConfig neither = parse({"--epochs", "3"});
  EXPECT_EQ(trained_length(neither.training, Precision::Bf16).epochs, 3);
  EXPECT_EQ(trained_length_note(neither.training, Precision::Bf16), "");
}

// A length on the command line is the run's in every precision: the file's
// bf16 length does not turn `--max-steps 20` into a full bf16 run. What the
// command line gives itself stays.
TEST(Config, CommandLineLengthReplacesTheFilesBf16Length) {
  const std::string ini = write_ini("epochs = 9\nmax-steps = 280\nbf16-epochs = 10\nbf16-max-steps = 312\n");
  const TrainingConfig file = parse({"--config", ini}).training;
  EXPECT_EQ(trained_length(file, Precision::Bf16).epochs, 10);
  EXPECT_EQ(trained_length(file, Precision::Bf16).max_steps, 312);
  for (const char* key : {"--max-steps", "--epochs"}) {
    const TrainingConfig t = parse({"--config", ini, key, "2"}).training;
    EXPECT_EQ(t.bf16_epochs, 0) << key;
    EXPECT_EQ(t.bf16_max_steps, 0) << key;
    EXPECT_EQ(trained_length(t, Precision::Bf16).epochs, std::string(key) == "--epochs" ? 2 : 9) << key;
    EXPECT_EQ(trained_length(t, Precision::Bf16).max_steps, std::string(key) == "--max-steps" ? 2 : 280) << key;
  }
  const TrainingConfig both = parse({"--config", ini, "--max-steps", "20", "--bf16-max-steps", "30"}).training;
  EXPECT_EQ(both.bf16_max_steps, 30);
  EXPECT_EQ(both.bf16_epochs, 0);
  std::remove(ini.c_str());
}

// The bf16 length meets the checks the length does, and an error says it is
// the bf16 one; a bf16 length without bf16 is named as having no effect.
TEST(Config, Bf16LengthIsValidatedAndNamedWhereItHasNoEffect) {
  EXPECT_NE(error_of({"--bf16-epochs", "-1"}).find("--bf16-epochs must be 0"), std::string::npos);
  EXPECT_NE(error_of({"--bf16-max-steps", "-1"}).find("--bf16-max-steps must be 0"), std::string::npos);
  const std::string m = error_of({"--resolution-schedule", "24:3,32", "--model", "speed94", "--head", "global-max",
                                  "--epochs", "5", "--bf16-epochs", "3"});
  EXPECT_NE(m.find("in bf16 (--bf16-epochs 3, --bf16-max-steps 0): --resolution-schedule 24:3,32"), std::string::npos)
      << m;
  EXPECT_NE(error_of({"--lr-tail-epochs", "2", "--epochs", "5", "--bf16-epochs", "2"}).find("in bf16"),
            std::string::npos);
  EXPECT_EQ(parse({"--bf16-epochs", "3"}).inert_options,
            std::vector<std::string>{"--bf16-epochs has no effect with --precision fp32 (it applies in bf16)"});
  EXPECT_TRUE(parse({"--bf16-epochs", "3", "--precision", "auto"}).inert_options.empty());
  EXPECT_TRUE(parse({"--bf16-max-steps", "3", "--precision", "bf16"}).inert_options.empty());
}

TEST(Config, ResolutionScheduleGivesEachEpochItsSize) {
  const RunConfig c = parse({"--resolution-schedule", "24:3,28:3,32", "--model", "speed94", "--head", "global-max"});
  const ResolutionSchedule& r = c.data.resolution;
  EXPECT_EQ(r.text(), "24:3,28:3,32");
  const std::vector<int> sizes = {24, 24, 24, 28, 28, 28, 32, 32, 32, 32};
  for (size_t epoch = 0; epoch < sizes.size(); ++epoch) EXPECT_EQ(r.size_at(static_cast<int64_t>(epoch)), sizes[epoch]);
  EXPECT_EQ(c.model.head, HeadKind::GlobalMax);
  EXPECT_TRUE(parse({}).data.resolution.empty());
  EXPECT_EQ(parse({}).data.resolution.size_at(0), 0) << "empty: the stored size";
  EXPECT_EQ(ResolutionSchedule::parse("20").size_at(7), 20);
  for (const char* bad : {"24:3,28:3", "24,32", "24:0,32", "24:x,32", "8:2,32", "24:2,40", "24:2,,32", "24:2,32,"}) {
    const std::string m = error_of({"--resolution-schedule", bad, "--head", "global-max", "--model", "speed94"});
    EXPECT_NE(m.find("--resolution-schedule"), std::string::npos) << bad << ": " << m;
  }
  const std::string m = error_of({"--resolution-schedule", "24:3,32", "--model", "speed94"});
  EXPECT_NE(m.find("--head global-max"), std::string::npos) << m;
  EXPECT_NE(error_of({"--resolution-schedule", "24:3,28:3"}).find("the last entry '28:3' must be a size alone"),
            std::string::npos);
}

// One training, one schedule: a resume compares schedules, so the same sizes
// written two ways are one schedule, and 32 px throughout is the empty one
// (no --head global-max needed).
TEST(Config, ResolutionSchedulesOfTheSameSizesAreOne) {
  EXPECT_EQ(ResolutionSchedule::parse("32"), ResolutionSchedule::parse(""));
  EXPECT_TRUE(ResolutionSchedule::parse("32:2,32").empty());
  EXPECT_EQ(ResolutionSchedule::parse("24:2,24:1,28").text(), "24:3,28");
  EXPECT_EQ(ResolutionSchedule::parse("28:3,28").text(), "28");
  EXPECT_EQ(ResolutionSchedule::parse("24:3,32:2,32").text(), "24:3,32");
  EXPECT_TRUE(parse({"--resolution-schedule", "32"}).data.resolution.empty());
}

// A schedule whose sizes before the last outlast the run never trains at its
// last size, the one the run is evaluated at: refused, naming both counts.
TEST(Config, ResolutionScheduleLongerThanTheRunIsRefused) {
  const std::vector<std::string> speed = {"--model", "speed94", "--head", "global-max"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), speed.begin(), speed.end());
    return args;
  };
  const std::string m = error_of(with({"--resolution-schedule", "24:4,28:3,32", "--epochs", "7"}));
  EXPECT_NE(m.find("take 7 epoch(s), but the run has 7 (--epochs): it would never train at 32 px"), std::string::npos)
      << m;
  EXPECT_EQ(parse(with({"--resolution-schedule", "24:4,28:3,32", "--epochs", "8"})).data.resolution.text(),
            "24:4,28:3,32");
}

// The low-rate tail's options: in range, and lookahead's only with lookahead.
TEST(Config, TailOptionsAreCheckedAndNeedTheirParts) {
  const RunConfig c = parse({"--lr-tail-epochs", "0.375", "--lr-floor", "0.05", "--lookahead-every", "4",
                             "--lookahead-decay", "0.7", "--lookahead-last-steps", "20"});
  EXPECT_DOUBLE_EQ(c.optim.lr_tail_epochs, 0.375);
  EXPECT_DOUBLE_EQ(c.optim.lr_floor, 0.05);
  EXPECT_DOUBLE_EQ(c.optim.lookahead_decay, 0.7);
  EXPECT_EQ(c.optim.lookahead_last_steps, 20);
  EXPECT_TRUE(c.inert_options.empty());
  EXPECT_NE(error_of({"--lr-floor", "1"}).find("--lr-floor"), std::string::npos);
  EXPECT_NE(error_of({"--lr-tail-epochs", "10"}).find("--lr-tail-epochs"), std::string::npos);
  EXPECT_NE(error_of({"--lookahead-every", "4", "--lookahead-decay", "1"}).find("--lookahead-decay"),
            std::string::npos);
  EXPECT_EQ(parse({"--lookahead-decay", "0.7"}).inert_options,
            std::vector<std::string>{"--lookahead-decay has no effect without --lookahead-every (it is 0)"});
}

TEST(Config, IniSectionsAreOptionalAndChecked) {
  const std::string ini = write_ini("[training]\nepochs = 3\n[optim]\nlr = 0.01\n\n[data]\nshuffle = false\n");
  const RunConfig c = parse({"--config", ini});
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
  EXPECT_NE(error_of({"--config", "/tmp"}).find("is a folder"), std::string::npos);
  // A FIFO is refused without opening it (opening would block until a writer came).
  char fifo[] = "/tmp/cifar_config_fifo_XXXXXX";
  ASSERT_NE(mkdtemp(fifo), nullptr);
  const std::string path = std::string(fifo) + "/c.ini";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  EXPECT_NE(error_of({"--config", path}).find("not a regular file"), std::string::npos);
  std::remove(path.c_str());
  rmdir(fifo);
}

// No number from the command line is used before it is checked against the
// limits of its meaning: inf passes "> 0" and turned into NaN models and
// non-JSON metrics; huge counts exhausted threads or memory.
TEST(Config, ValuesMustBeFiniteAndWithinTheirLimits) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--lr", "inf"}, "--lr must be a finite number (got inf)"},
      {{"--weight-decay", "inf"}, "--weight-decay must be a finite number"},
      {{"--momentum", "nan"}, "--momentum must be a finite number"},
      {{"--warmup-epochs", "1e300"}, "--warmup-epochs must be between 0 and --epochs (10)"},
      {{"--comm-timeout", "inf"}, "--comm-timeout must be a finite number"},
      {{"--comm-timeout", "1e9"}, "at most 604800 seconds"},
      {{"--startup-timeout", "0"}, "--startup-timeout must be positive and at most 604800 seconds"},
      {{"--bucket-mb", "1e30"}, "--bucket-mb must be positive and at most 1048576"},
      {{"--threads", "100000"}, "--threads must be 0 (automatic) or up to"},
      {{"--blas-threads", "100000"}, "--blas-threads must be"},
      {{"--prefetch-batches", "100000"}, "--prefetch-batches must be between 0 and 64"},
      {{"--on-nonfinite", "ignore"}, "stop, skip"},
      {{"--max-loss", "0"}, "--max-loss must be positive (got 0)"},
      {{"--max-loss", "inf"}, "--max-loss must be a finite number"},
      {{"--max-skipped-fraction", "1.5"}, "--max-skipped-fraction must be in [0, 1] (got 1.5)"},
      {{"--max-skipped-fraction", "-0.1"}, "--max-skipped-fraction must be in [0, 1]"},
  };
  for (const auto& [args, expected] : cases) {
    const std::string m = error_of(args);
    EXPECT_NE(m.find(expected), std::string::npos) << args[0] << " " << args[1] << ": " << m;
  }
  EXPECT_EQ(parse({"--threads", "2"}).runtime.threads, 2);  // within the limit of any machine
  EXPECT_EQ(parse({"--on-nonfinite", "skip"}).training.on_nonfinite, OnNonFinite::Skip);
  EXPECT_EQ(parse({}).training.on_nonfinite, OnNonFinite::Stop);
  EXPECT_EQ(parse({}).training.max_loss, 100);
  EXPECT_EQ(parse({}).training.max_skipped_fraction, 0.5);
  EXPECT_EQ(parse({"--max-loss", "1e6", "--max-skipped-fraction", "1"}).training.max_loss, 1e6);
  EXPECT_EQ(parse({}).checkpoint.elastic_batch, ElasticBatch::Global);
  EXPECT_EQ(parse({"--elastic-batch", "per-rank"}).checkpoint.elastic_batch, ElasticBatch::PerRank);
  EXPECT_NE(error_of({"--elastic-batch", "local"}).find("global, per-rank"), std::string::npos);
}

// MPI's start runs under the command line's --startup-timeout, read before
// the options are: the last valid value, else the default.
TEST(Config, StartupTimeoutIsReadBeforeTheOptions) {
  auto read = [](std::vector<const char*> args) {
    args.insert(args.begin(), "cifar_mpi");
    return startup_timeout_on_command_line(static_cast<int>(args.size()), args.data());
  };
  EXPECT_EQ(read({}), kDefaultStartupTimeoutSeconds);
  EXPECT_EQ(read({"--startup-timeout", "20"}), 20);
  EXPECT_EQ(read({"--startup-timeout=7.5", "--epochs", "2"}), 7.5);
  EXPECT_EQ(read({"--startup-timeout", "20", "--startup-timeout", "30"}), 30);
  for (const char* bad : {"0", "-3", "x", "inf", "1e9"})
    EXPECT_EQ(read({"--startup-timeout", bad}), kDefaultStartupTimeoutSeconds) << bad;
  EXPECT_EQ(read({"--startup-timeout"}), kDefaultStartupTimeoutSeconds);  // no value: the reading says so
  EXPECT_EQ(parse({"--startup-timeout", "45"}).comm.startup_timeout_seconds, 45);
}

// What a checkpoint can only be continued with: the options that change the
// trajectory. Length, speed, placement and outputs are free.
TEST(Config, RunDefinitionHoldsWhatChangesTheTrajectory) {
  std::map<std::string, std::string> keys;
  for (const auto& [key, value] : parse({"--lr", "0.0012345678", "--shuffle-seed", "4"}).run_definition())
    keys[key] = value;
  for (const char* key :
       {"dataset",      "shuffle",   "shuffle-seed",    "augment",   "flip",          "crop-pad",
        "crop-padding", "drop-last", "normalize",       "model",     "batch-size",    "global-batch-size",
        "accumulate",   "seed",      "label-smoothing", "precision", "optimizer",     "lr",
        "momentum",     "nesterov",  "weight-decay",    "schedule",  "warmup-epochs", "lookahead-every"})
    EXPECT_EQ(keys.count(key), 1u) << key;
  for (const char* key : {"data",
                          "epochs",
                          "max-steps",
                          "eval",
                          "eval-every-epochs",
                          "tta",
                          "target-accuracy",
                          "on-nonfinite",
                          "max-loss",
                          "max-skipped-fraction",
                          "prefetch-batches",
                          "threads",
                          "backend",
                          "bucket-mb",
                          "checkpoint-dir",
                          "resume",
                          "elastic-batch",
                          "output",
                          "metrics",
                          "tensorboard",
                          "log-every"})
    EXPECT_EQ(keys.count(key), 0u) << key;
  EXPECT_EQ(keys["shuffle-seed"], "4");
  // Values are printed to the last digit that tells them apart.
  EXPECT_EQ(keys["lr"], "0.0012345678");
  EXPECT_EQ(parse({"--lr", "0.001"}).run_definition(), RunConfig{}.run_definition());
  EXPECT_NE(parse({"--lr", "0.0012345679"}).run_definition(), parse({"--lr", "0.0012345678"}).run_definition());
}

// --cuda-graphs builds the fused optimiser (a graph captures only that one),
// and the options stay as given: the run log and checkpoints print
// fused-optimizer = false, and it does not define the run.
TEST(Config, CudaGraphsBuildTheFusedOptimizerWithTheOptionsAsGiven) {
  RunConfig c;
  EXPECT_FALSE(built_optimizer_config(c).fused);
  c.optim.fused = true;
  EXPECT_TRUE(built_optimizer_config(c).fused);
  c.optim.fused = false;
  c.runtime.cuda_graphs = true;
  const OptimConfig built = built_optimizer_config(c);
  EXPECT_TRUE(built.fused);
  EXPECT_EQ(built.optimizer, c.optim.optimizer);
  EXPECT_EQ(built.lr, c.optim.lr);
  EXPECT_FALSE(c.optim.fused);
  int described = 0;
  for (const auto& line : c.describe())
    if (line.find(" fused-optimizer ") != std::string::npos) {
      ++described;
      EXPECT_NE(line.find("= false"), std::string::npos) << line;
    }
  EXPECT_EQ(described, 1);
  for (const auto& [key, value] : c.run_definition()) EXPECT_NE(key, "fused-optimizer");
}

TEST(Config, LegacyLoaderThreadsStillWorks) {
  EXPECT_EQ(parse({"--loader-threads", "0"}).data.prefetch_batches, 0);
  EXPECT_EQ(parse({"--loader-threads", "1"}).data.prefetch_batches, RunConfig{}.data.prefetch_batches);
}

// The message names the file, the line and, where one is near, the key meant.
TEST(Config, UnknownKeyInFileNamesFileLineAndNearestKey) {
  const std::string ini = write_ini("epochs = 3\nlearning_rate = 0.1\n");
  EXPECT_EQ(error_of({"--config", ini}),
            "config file " + ini + " line 2: unknown key 'learning_rate' (run cifar_mpi --help for valid keys)");
  std::remove(ini.c_str());
  const std::string near = write_ini("# a comment\n\n[training]\nepoch = 3\n");
  EXPECT_EQ(error_of({"--config", near}),
            "config file " + near + " line 4: unknown key 'epoch'; did you mean 'epochs'?");
  std::remove(near.c_str());
  const std::string underscore = write_ini("batch_size = 8  # per rank\n");
  EXPECT_EQ(error_of({"--config", underscore}),
            "config file " + underscore + " line 1: unknown key 'batch_size'; did you mean 'batch-size'?");
  std::remove(underscore.c_str());
}

// What to do and which file to read are the command line's: a file's
// `check-env = true` turned the run into a check, its `config =` was ignored.
TEST(Config, CommandLineOnlyOptionsAreRefusedInFiles) {
  for (const char* key : {"config", "check-env", "help", "strict"}) {
    const std::string ini = write_ini(std::string("epochs = 3\n") + key + " = true\n");
    EXPECT_EQ(error_of({"--config", ini}),
              "config file " + ini + " line 2: '" + key + "' is a command-line option only");
    std::remove(ini.c_str());
  }
  const std::string sectioned = write_ini("[runtime]\nthreads = 1\ncheck-env = true\n");
  EXPECT_EQ(error_of({"--config", sectioned, "--check-env"}),
            "config file " + sectioned + " line 3: 'check-env' is a command-line option only");
  std::remove(sectioned.c_str());
  // On the command line they are what they were.
  EXPECT_TRUE(parse({"--check-env", "--strict"}).strict);
  EXPECT_TRUE(parse({"--help"}).help);
}

// --self-test is the command line's as --check-env is, and the two are two
// different runs.
TEST(Config, SelfTestIsACommandLineOptionApartFromCheckEnv) {
  EXPECT_TRUE(parse({"--self-test"}).self_test);
  EXPECT_FALSE(parse({}).self_test);
  const std::string ini = write_ini("epochs = 3\nself-test = true\n");
  EXPECT_EQ(error_of({"--config", ini}), "config file " + ini + " line 2: 'self-test' is a command-line option only");
  std::remove(ini.c_str());
  EXPECT_EQ(error_of({"--self-test", "--check-env"}), "--self-test and --check-env are two runs: give one of them");
}

// The file is the user's input too: its values are read and checked even
// where the command line sets the same key (and wins).
TEST(Config, FileValuesAreCheckedWhenTheCommandLineSetsThem) {
  const std::string ini = write_ini("epochs = 3\nlr = abc\n");
  EXPECT_EQ(error_of({"--config", ini, "--lr", "0.1"}),
            "config file " + ini + " line 2: the argument ('abc') for option 'lr' is invalid");
  std::remove(ini.c_str());
  const std::string choice = write_ini("[training]\nprecision = fp8\n");
  const std::string m = error_of({"--config", choice, "--precision", "bf16"});
  EXPECT_EQ(m.rfind("config file " + choice + " line 2: ", 0), 0u) << m;
  EXPECT_NE(m.find("fp32, bf16, fp16"), std::string::npos) << m;
  std::remove(choice.c_str());
  const std::string syntax = write_ini("epochs = 3\nlr\n");
  EXPECT_EQ(error_of({"--config", syntax, "--lr", "0.1"}),
            "config file " + syntax + " line 2: the options configuration file contains an invalid line 'lr'");
  std::remove(syntax.c_str());
  // Valid values: the command line still wins.
  const std::string good = write_ini("epochs = 3\nlr = 0.01\n");
  EXPECT_DOUBLE_EQ(parse({"--config", good, "--lr", "0.1"}).optim.lr, 0.1);
  EXPECT_EQ(parse({"--config", good, "--lr", "0.1"}).training.epochs, 3);
  std::remove(good.c_str());
}

// Boost dropped every word no option took: `--lr 0.1 0.05` trained at 0.1.
TEST(Config, StrayArgumentsAreRefused) {
  EXPECT_EQ(error_of({"--lr", "0.1", "0.05"}),
            "unexpected argument '0.05' after --lr 0.1: each option takes one value");
  EXPECT_EQ(error_of({"--epochs=2", "3"}), "unexpected argument '3' after --epochs=2: each option takes one value");
  EXPECT_EQ(error_of({"--check-env", "now"}), "unexpected argument 'now' after --check-env, which takes no value");
  EXPECT_EQ(error_of({"train", "--epochs", "2"}),
            "unexpected argument 'train': arguments are options, --name value or --name=value (run cifar_mpi --help "
            "for the options)");
  // One value per option, in either spelling, negative numbers included.
  const RunConfig c = parse({"--lr", "0.1", "--epochs=2", "--blas-threads", "-1", "--metrics", ""});
  EXPECT_DOUBLE_EQ(c.optim.lr, 0.1);
  EXPECT_EQ(c.training.epochs, 2);
  EXPECT_EQ(c.runtime.blas_threads, -1);
  EXPECT_EQ(c.output.metrics, "");
}

// Names are exact: Boost's prefix guessing ran `--epoch 3` as --epochs 3.
// An unknown option is named with the one it is nearest to.
TEST(Config, OptionNamesMustBeExact) {
  EXPECT_EQ(error_of({"--epoch", "3"}), "unknown option --epoch; did you mean --epochs?");
  EXPECT_EQ(error_of({"--epoch=3"}), "unknown option --epoch; did you mean --epochs?");
  // --batch is no name's within a few edits, but begins only --batch-size.
  EXPECT_EQ(error_of({"--batch", "8"}), "unknown option --batch; did you mean --batch-size?");
  EXPECT_EQ(error_of({"--batch_size", "8"}), "unknown option --batch_size; did you mean --batch-size?");
  EXPECT_EQ(error_of({"--chekc-env"}), "unknown option --chekc-env; did you mean --check-env?");
  EXPECT_EQ(error_of({"-lr", "0.1"}), "unknown option -lr; did you mean --lr?");
  EXPECT_EQ(error_of({"--lr", "0.1", "--co", "x"}), "unknown option --co (run cifar_mpi --help for the options)");
  EXPECT_EQ(error_of({"--no-such-option", "1"}),
            "unknown option --no-such-option (run cifar_mpi --help for the options)");
  EXPECT_EQ(parse({"--epochs", "3"}).training.epochs, 3);
  EXPECT_TRUE(parse({"-h"}).help);
}

TEST(Config, NegativeCheckpointIntervalsNameTheirKey) {
  EXPECT_EQ(error_of({"--checkpoint-every-steps", "-5"}),
            "--checkpoint-every-steps must not be negative (0: off), got -5");
  EXPECT_EQ(error_of({"--checkpoint-every-epochs", "-1"}),
            "--checkpoint-every-epochs must not be negative (0: only at the end), got -1");
  EXPECT_EQ(parse({"--checkpoint-every-steps", "0", "--checkpoint-every-epochs", "0"}).checkpoint.every_steps, 0);
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
            std::string::npos)
      << m;
  EXPECT_NE(error_of({"--data", "x%value%.h5"}).find("holds '%value%'"), std::string::npos);
  const std::string ini = write_ini("epochs = 3\n%prefix_option% = 1\n");
  const std::string f = error_of({"--config", ini});
  EXPECT_NE(f.find("config file " + ini + ":2 holds '%prefix_option%'"), std::string::npos) << f;
  std::remove(ini.c_str());
  // A single % (Slurm-style names) is no placeholder.
  EXPECT_EQ(parse({"--metrics", "runs/%j/metrics.json"}).output.metrics, "runs/%j/metrics.json");
}

TEST(Config, HelpListsEveryOptionWithDefault) {
  const std::string h = config_help(registered_names());
  for (const char* opt :
       {"--data", "--model", "--epochs", "--max-steps", "--batch-size", "--optimizer", "--lr", "--schedule", "--seed",
        "--shuffle", "--augment", "--backend", "--bucket-mb", "--output", "--metrics"})
    EXPECT_NE(h.find(opt), std::string::npos) << opt;
  EXPECT_NE(h.find("(=0.001)"), std::string::npos) << h;
}

TEST(Config, HelpGroupsOptionsBySection) {
  const std::string h = config_help(registered_names());
  for (const char* section :
       {"[data]", "[model]", "[training]", "[optim]", "[comm]", "[runtime]", "[checkpoint]", "[output]"})
    EXPECT_NE(h.find(section), std::string::npos) << section;
  EXPECT_LT(h.find("[data]"), h.find("--shuffle-seed"));
  EXPECT_LT(h.find("--shuffle-seed"), h.find("[model]"));
}

// Registering a model, optimiser, backend or dataset is enough for --help to
// list it and for the parser to accept it (docs/extending.md).
TEST(Config, HelpListsEveryRegisteredName) {
  const std::string h = config_help(registered_names());
  for (const auto& names : {model_names(), optimizer_names(), backend_names(), dataset_names()}) {
    ASSERT_FALSE(names.empty());
    for (const auto& name : names) EXPECT_NE(h.find(name), std::string::npos) << name << " missing from --help";
  }
  for (const auto& name : model_names()) EXPECT_EQ(parse({"--model", name}).model.name, name);
  for (const auto& name : optimizer_names()) EXPECT_EQ(parse({"--optimizer", name}).optim.optimizer, name);
}

}  // namespace
}  // namespace cifar
