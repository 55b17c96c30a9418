// RunConfig: every setting of a run, from the command line and an INI file
// (--config FILE; the command line wins), validated before anything runs.
//
// The settings are grouped in sections, one struct each, and every part of the
// program takes only the section it needs (the loader DataConfig, the
// optimiser OptimConfig, ...). Users see one flat set of option names
// (--batch-size, or `batch-size = 256` in the INI file, optionally under its
// `[training]` header); --help lists them by section. Values with a closed set
// are enums (config/choices.hpp), names of registered parts (model, optimiser,
// backend, dataset) are checked against the registries' names, which main
// hands in (config/registered_names.hpp), both at parse time.
// Unknown keys, wrong types and impossible values throw ConfigError (exit 2)
// naming the option and the file and line; option names are exact (no
// prefixes), an unknown one is named with the nearest known one, and a word
// no option takes is refused, not dropped.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/choices.hpp"
#include "config/registered_names.hpp"
#include "config/resolution_schedule.hpp"

namespace cifar {

// Upper limits of values that cannot be checked against the data or the world.
inline constexpr int kThreadsPerCpu = 4;         // --threads, --blas-threads: at most this many per CPU of the node
inline constexpr int kMaxPrefetchBatches = 64;   // each prefetched batch holds memory
inline constexpr double kMaxBucketMb = 1 << 20;  // 1 TiB
inline constexpr double kMaxCommTimeoutSeconds = 7 * 24 * 3600.0;
// Each start-up stage's limit (process/startup_deadline.hpp): MPI's start on
// a large job and NCCL's set-up take seconds to a minute.
inline constexpr double kDefaultStartupTimeoutSeconds = 300.0;

// What the training set is and how batches are drawn from it.
struct DataConfig {
  std::string dataset = "cifar10";       // a name in the dataset registry (data/dataset.hpp)
  std::string path = "data/cifar10.h5";  // --data: the file the dataset reads
  bool shuffle = true;
  long shuffle_seed = 0;  // DistributedSampler(seed=...): 0 in PyTorch and in the PyTorch DDP recipe, whatever --seed
  bool augment = false;   // random crop and horizontal flip
  FlipMode flip = FlipMode::Random;
  int crop_pad = 4;  // the crop's offsets: -crop_pad..crop_pad pixels
  CropPadding crop_padding = CropPadding::Zero;
  double brightness_jitter = 0;  // with augment: added, uniform in +-this, to the normalised image
  double contrast_jitter = 0;    // with augment: then multiplied, uniform in 1 +- this
  bool drop_last = false;
  NormalizeKind normalize = NormalizeKind::Recipe;
  int prefetch_batches = 2;       // prepared ahead by one background thread per rank; 0: inline
  bool on_device = true;          // GPUs: keep the uint8 splits on the device (--data-on-device)
  ResolutionSchedule resolution;  // training images resized per epoch (empty: the stored 32 px)
};

struct ModelConfig {
  std::string name = "convnet";  // --model: a name in the model registry (model/model.hpp)
  bool channels_last = true;
  HeadKind head = HeadKind::Pool3;  // speed94 models: max-pool 3, or the global maximum (any input size)
};

// How long the run is and what one step computes.
struct TrainingConfig {
  int epochs = 10;
  long max_steps = 0;         // stop after this many optimiser steps (0: no limit)
  int bf16_epochs = 0;        // in bf16 (given, or auto's choice): epochs instead, where set (trained_length)
  long bf16_max_steps = 0;    // ... and max_steps instead, where set
  int batch_size = 256;       // per rank, per micro-batch
  int global_batch_size = 0;  // when set: the batch over all ranks, divided among them (batch_size is ignored)
  int accumulate = 1;         // micro-batches per optimiser step
  long seed = 0;              // initialisation and augmentation (the PyTorch DDP recipe's torch.manual_seed)
  double label_smoothing = 0.0;
  Precision precision = Precision::Fp32;
  bool eval = true;             // evaluate on the test split after every epoch
  int eval_every_epochs = 1;    // ... or every N epochs and after the last
  TtaMode tta = TtaMode::None;  // test-time augmentation of the evaluation
  double tta_fraction = 1.0;    // selective TTA: the least confident fraction of the test split gets it
  double target_accuracy = 0;   // stop once the test accuracy reaches this (0: never)
  OnNonFinite on_nonfinite = OnNonFinite::Stop;
  // A run failed numerically (exit code 5) when an epoch's mean training or
  // test loss is above max_loss or not finite, or more than this fraction
  // of its steps so far was skipped (step/divergence.hpp).
  double max_loss = 100;              // 43x chance level (ln 10 = 2.30)
  double max_skipped_fraction = 0.5;  // "mostly skipped"
};

struct OptimConfig {
  std::string optimizer = "adam";  // a name in the optimiser registry (optim/optimizer.hpp)
  double lr = 1e-3;                // peak learning rate
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  ScheduleKind schedule = ScheduleKind::Constant;
  double warmup_epochs = 0.0;
  int lookahead_every = 0;        // pull the weights towards their running average every N steps (0: off)
  double lookahead_decay = 0;     // > 0: that constant decay instead of the ramp
  long lookahead_last_steps = 0;  // > 0: only over the run's last N steps, the average starting there
  double lr_tail_epochs = 0;      // the schedule ends this many epochs early; its rate then holds at lr_floor
  double lr_floor = 0;            // the schedule's rate never falls below this fraction of the peak
  bool fused = false;             // --fused-optimizer: the graph-safe Adam/SGD (optim/fused_optimizer.hpp)
  // --optimizer muon (optim/muon.hpp): the orthogonalised groups' peak rate,
  // momentum and decoupled weight decay; whether 2-d matrices join the filters.
  double muon_lr = 0.02;
  double muon_momentum = 0.95;
  double muon_weight_decay = 0.0;
  bool muon_matrices = false;
};

struct CommConfig {
  std::string backend = "auto";  // auto, or a name in the backend registry (comm/backends.hpp)
  double bucket_mb = 25.0;
  double first_bucket_mb = 1.0;
  double timeout_seconds = 600.0;                                  // --comm-timeout
  double startup_timeout_seconds = kDefaultStartupTimeoutSeconds;  // --startup-timeout: each start-up stage
  bool allow_socket_network = false;  // --allow-socket-network: NCCL over TCP between nodes
};

// Where and how each rank computes.
struct RuntimeConfig {
  DeviceRequest device = DeviceRequest::Auto;
  int threads = 0;       // intra-op threads per rank (0: the cores this rank owns)
  int blas_threads = 0;  // OpenBLAS threads per rank (0: as `threads`; -1: as the PyTorch DDP recipe's processes)
  bool retain_memory = true;
  bool deterministic = false;  // GPUs: deterministic cuDNN, no autotuning
  bool profile = false;
  bool cuda_graphs = false;  // --cuda-graphs: replay each full step as one CUDA graph (step/cuda_graph_step.hpp)
  BindNuma bind_numa = BindNuma::Auto;  // --bind-numa (placement/numa_binding.hpp)
};

// --resume none | auto | PATH
struct ResumeRequest {
  enum class Kind { None, Auto, Path };
  Kind kind = Kind::None;
  std::string path;  // for Kind::Path
  static ResumeRequest parse(const std::string& text);
  std::string text() const;
};

struct CheckpointConfig {
  std::string dir;  // --checkpoint-dir; empty: no checkpoints
  long every_steps = 0;
  int every_epochs = 1;
  int keep = 3;
  ResumeRequest resume;
  ElasticBatch elastic_batch = ElasticBatch::Global;  // --elastic-batch: resuming at another world size
  bool enabled() const { return !dir.empty(); }
};

struct OutputConfig {
  std::string model = "ddp_model.pth";    // --output
  std::string metrics = "metrics.jsonl";  // empty: none
  std::string tensorboard;                // --tensorboard DIR: TensorBoard event files; empty: none
  int log_every = 100;
};

struct RunConfig {
  // What to do instead of training.
  bool check_env = false;
  bool strict = false;  // with check_env: placement warnings are errors
  // --self-test: a few training steps of each path the node can run (app/self_test.hpp).
  bool self_test = false;
  bool help = false;
  std::string config_file;
  // Options given that the rest leaves without effect ("--tta-fraction has no
  // effect without --tta (it is none)"): warnings for the run's log.
  std::vector<std::string> inert_options;

  DataConfig data;
  ModelConfig model;
  TrainingConfig training;
  OptimConfig optim;
  CommConfig comm;
  RuntimeConfig runtime;
  CheckpointConfig checkpoint;
  OutputConfig output;

  // "  key = value" lines, in --help order, for the run log and checkpoints.
  std::vector<std::string> describe() const;
  // (key, value) of the options that define the run: a checkpoint is only
  // continued by a run with the same values (run_config.cpp marks them).
  std::vector<std::pair<std::string, std::string>> run_definition() const;
};

// Rules that derive what a run builds from several options. They apply where
// the part is built, not to the stored options: describe() (the run log and
// each checkpoint's config) and run_definition() keep the options as given,
// but for the run's length, which trained_length() sets in the run's own
// configuration (the plan, the schedule and the checkpoints all read it).
//
// The optimiser's configuration: --fused-optimizer, forced on by
// --cuda-graphs, since a graph captures only the graph-safe optimiser
// (optim/fused_optimizer.hpp). --fused-optimizer does not define the run, so
// a checkpoint resumes with or without it.
OptimConfig built_optimizer_config(const RunConfig& config);

// The run's length in the precision it trains in: in bf16, --bf16-epochs and
// --bf16-max-steps (where set) replace --epochs and --max-steps, for a recipe
// that wins back with more steps the accuracy bf16 rounds away. Training
// applies it where --precision auto is resolved (train/run_setup.cpp); from
// there on the run's configuration holds the length it trains.
TrainingConfig trained_length(const TrainingConfig& training, Precision trained);
// For the start-up log and --check-env: "length in bf16: 10 epochs, at most
// 312 optimiser steps (bf16-epochs, bf16-max-steps)"; "" where the bf16
// length does not apply.
std::string trained_length_note(const TrainingConfig& training, Precision trained);

// Parses argv (and the INI file it names) into a validated RunConfig.
// Throws ConfigError on unknown options, bad types and impossible values.
// --data comes from the command line, else from $CIFAR_DATA (where a site
// keeps the data set), else from the config file, else data/cifar10.h5.
RunConfig parse_config(int argc, const char* const argv[], const RegisteredNames& names);

// --startup-timeout as the command line gives it, before MPI has started and
// the options are read (MPI's start and the reading run under it): the last
// positive number given, else kDefaultStartupTimeoutSeconds. A config file's
// value applies from the first stage after the reading.
double startup_timeout_on_command_line(int argc, const char* const argv[]);

// Where an installed cifar_mpi keeps its configs: $CIFAR_MPI_HOME (set by
// the module file) and the program's own folder, each + kInstalledConfigDir.
inline constexpr const char* kInstalledConfigDir = "share/cifar_mpi/config";  // cmake/Install.cmake
std::vector<std::string> config_folders();
// The file `--config name` means: `name` itself when it is a file or holds a
// '/'; else a config by name ("default", "smoke.ini"), the first
// <folder>/<name>[.ini] of `folders`. Throws ConfigError naming the folders
// searched and the configs they hold.
std::string resolve_config_file(const std::string& name, const std::vector<std::string>& folders);
// The --help text: every option by section, with its default.
std::string config_help(const RegisteredNames& names);
// Checks that do not need the data or the world (ranges, names).
void validate(const RunConfig& c, const RegisteredNames& names);

}  // namespace cifar
