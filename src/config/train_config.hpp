// TrainConfig: every setting of a run, from the command line and an INI file
// (--config FILE; the command line wins), validated before anything runs.
// Unknown keys, wrong types and impossible values throw ConfigError (exit 2)
// naming the option and the file.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cifar {

struct TrainConfig {
  // what to do
  bool check_env = false;
  bool help = false;
  std::string config_file;

  // data
  std::string data = "data/cifar10.h5";
  bool shuffle = true;
  bool augment = false;
  bool drop_last = false;
  std::string normalize = "recipe";  // recipe (mean 0.5, std 0.5) | dataset (file's mean/std)
  int loader_threads = 1;            // background batch-preparation threads per rank
  bool data_on_device = true;        // GPUs: keep the uint8 splits on the device

  // model and optimisation
  std::string model = "convnet";
  int epochs = 10;
  long max_steps = 0;  // stop after this many optimiser steps (0: no limit)
  int batch_size = 256;  // per rank
  int accumulate = 1;    // micro-batches per optimiser step
  std::string optimizer = "adam";  // adam | sgd
  double lr = 1e-3;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  std::string schedule = "constant";  // constant | cosine | onecycle
  double warmup_epochs = 0.0;
  double label_smoothing = 0.0;
  long seed = 0;
  long shuffle_seed = 0;  // DistributedSampler(seed=...): its own seed, 0 in PyTorch and the recipe

  // distribution and speed
  std::string backend = "auto";  // auto | mpi | nccl
  std::string device = "auto";   // auto | cpu | cuda
  double bucket_mb = 25.0;
  double first_bucket_mb = 1.0;
  double comm_timeout = 600.0;  // seconds
  int threads = 0;              // intra-op threads per rank (0: cores this rank owns)
  int blas_threads = 0;         // OpenBLAS threads per rank (0: as `threads`; -1: as the recipe's processes)
  bool channels_last = true;
  bool retain_memory = true;
  std::string precision = "fp32";  // fp32 | bf16 | fp16
  bool deterministic = false;      // GPUs: deterministic cuDNN, no autotuning
  bool profile = false;

  // outputs and progress
  std::string output = "ddp_model.pth";
  std::string metrics = "metrics.jsonl";
  int log_every = 100;
  bool eval = true;

  // checkpoints
  std::string checkpoint_dir;  // empty: no checkpoints
  long checkpoint_every_steps = 0;
  int checkpoint_every_epochs = 1;
  int keep_checkpoints = 3;
  std::string resume = "none";  // none | auto | PATH

  // Pretty "key = value" lines for the run log (rank 0 prints them once).
  std::vector<std::string> describe() const;
};

// Parses argv (and the INI file it names) into a validated TrainConfig.
// Throws ConfigError on unknown options, bad types and impossible values.
TrainConfig parse_config(int argc, const char* const argv[]);
// The --help text with every option and its default.
std::string config_help();
// Checks that do not need the data or the world (ranges, names).
void validate(const TrainConfig& c);

}  // namespace cifar
