// Boost.Program_options front end for TrainConfig. Every option is declared
// once, in visit_options(); parsing, --help and the printed configuration all
// come from that one list.
#include "config/train_config.hpp"

#include <boost/program_options.hpp>

#include <fstream>
#include <sstream>

#include "util/error.hpp"
#include "util/log.hpp"

namespace po = boost::program_options;

namespace cifar {
namespace {

template <typename Visitor>
void visit_options(TrainConfig& c, Visitor&& v) {
  v("data", c.data, "HDF5 file made by cifar_pack (train and test splits)");
  v("shuffle", c.shuffle, "reshuffle the training set every epoch (DistributedSampler semantics)");
  v("augment", c.augment, "random crop (4-pixel padding) and horizontal flip");
  v("drop-last", c.drop_last, "drop the tail that does not fill a batch / divide by the world size");
  v("normalize", c.normalize, "recipe (mean 0.5, std 0.5, as the Python recipe) | dataset (the file's mean/std)");
  v("loader-threads", c.loader_threads, "background threads preparing batches per rank (0: prepare inline)");
  v("data-on-device", c.data_on_device,
    "GPUs: hold the uint8 splits on the device and gather, augment and normalise there (no CPU in the loop)");
  v("model", c.model, "convnet (the reference recipe) | resnet18");
  v("epochs", c.epochs, "training epochs");
  v("max-steps", c.max_steps, "stop after this many optimiser steps (0: no limit)");
  v("batch-size", c.batch_size, "images per rank per micro-batch");
  v("accumulate", c.accumulate, "micro-batches per optimiser step (gradient accumulation)");
  v("optimizer", c.optimizer, "adam | sgd");
  v("lr", c.lr, "peak learning rate");
  v("momentum", c.momentum, "SGD momentum");
  v("nesterov", c.nesterov, "SGD with Nesterov momentum");
  v("weight-decay", c.weight_decay, "L2 weight decay");
  v("schedule", c.schedule, "learning-rate schedule: constant | cosine | onecycle");
  v("warmup-epochs", c.warmup_epochs, "linear warm-up before the schedule (epochs, may be fractional)");
  v("label-smoothing", c.label_smoothing, "label smoothing for the cross-entropy loss, in [0, 1)");
  v("seed", c.seed, "seed for initialisation and augmentation (the recipe's torch.manual_seed)");
  v("shuffle-seed", c.shuffle_seed,
    "seed of the sample order, as DistributedSampler's own seed (default 0 there and in the recipe, whatever --seed)");
  v("backend", c.backend, "gradient all-reduce: auto (nccl on GPUs, mpi on CPUs) | mpi | nccl");
  v("device", c.device, "auto | cpu | cuda (cuda:<local rank>)");
  v("bucket-mb", c.bucket_mb, "gradient bucket size in MiB (all buckets but the first)");
  v("first-bucket-mb", c.first_bucket_mb, "size of the first gradient bucket in MiB (starts communication early)");
  v("comm-timeout", c.comm_timeout, "seconds a collective may take before the job is ended");
  v("threads", c.threads, "intra-op threads per rank (0: the cores this rank owns / ranks sharing them)");
  v("blas-threads", c.blas_threads,
    "OpenBLAS threads per rank for the linear layers, whose results depend on the count (0: as --threads; "
    "-1: as the Python recipe's processes get them, for its exact numbers: $OPENBLAS_NUM_THREADS, "
    "$GOTO_NUM_THREADS, $OMP_NUM_THREADS, else every CPU of the node, however the rank is bound)");
  v("channels-last", c.channels_last, "use the channels_last memory format for convolutions");
  v("retain-memory", c.retain_memory,
    "keep freed memory in the process for reuse (no per-step page faults; glibc mallopt)");
  v("precision", c.precision, "fp32 | bf16 | fp16 (autocast, GPUs)");
  v("deterministic", c.deterministic,
    "GPUs: deterministic cuDNN algorithms, no autotuning (repeatable runs and exact resumes; slower)");
  v("profile", c.profile, "print per-epoch shares of data, forward, backward, communication and optimiser time");
  v("output", c.output, "model file written by rank 0 at the end (loads in Python with torch.load)");
  v("metrics", c.metrics, "per-epoch metrics file, JSON Lines (empty: none)");
  v("log-every", c.log_every, "print a progress line every N batches");
  v("eval", c.eval, "evaluate on the test split after every epoch");
  v("checkpoint-dir", c.checkpoint_dir, "folder for checkpoints (empty: no checkpoints)");
  v("checkpoint-every-steps", c.checkpoint_every_steps, "also checkpoint every N optimiser steps (0: off)");
  v("checkpoint-every-epochs", c.checkpoint_every_epochs, "checkpoint every N epochs (0: only at the end)");
  v("keep-checkpoints", c.keep_checkpoints, "how many recent checkpoints to keep");
  v("resume", c.resume, "none | auto (newest complete checkpoint in --checkpoint-dir) | PATH");
}

std::string text(const std::string& s) { return s.empty() ? "\"\"" : s; }
std::string text(bool b) { return b ? "true" : "false"; }
template <typename T>
std::string text(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

po::options_description make_options(TrainConfig& c) {
  po::options_description opts("Options (also valid as `key = value` lines in the --config INI file)");
  opts.add_options()("help,h", po::bool_switch(&c.help), "print this help and exit")(
      "config", po::value<std::string>(&c.config_file), "INI file of options; the command line wins")(
      "check-env", po::bool_switch(&c.check_env),
      "print each rank's placement and the library versions, then exit (non-zero if the world cannot train)");
  visit_options(c, [&](const char* name, auto& field, const char* help) {
    using T = std::decay_t<decltype(field)>;
    opts.add_options()(name, po::value<T>(&field)->default_value(field, text(field)), help);
  });
  return opts;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

void require_one_of(const std::string& key, const std::string& value, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw ConfigError("--" + key + ": '" + value + "' is not one of: " + list);
}

}  // namespace

std::string config_help() {
  TrainConfig defaults;
  std::ostringstream os;
  os << "cifar_mpi — data-parallel CIFAR-10 training with MPI, NCCL and LibTorch\n\n"
        "Usage:  mpirun -np N cifar_mpi [--config config/default.ini] [--option value ...]\n"
        "        srun --mpi=pmix cifar_mpi ...      (one rank per GPU, or per CPU slot)\n\n"
     << make_options(defaults)
     << "\nExit codes: 0 done, 1 runtime failure, 2 bad configuration, 3 preempted (checkpoint written; "
        "resume with --resume auto), 4 communication timeout.\n";
  return os.str();
}

void validate(const TrainConfig& c) {
  require(c.epochs >= 1, "--epochs must be at least 1 (got " + text(c.epochs) + ")");
  require(c.max_steps >= 0, "--max-steps must be 0 (no limit) or positive");
  require(c.batch_size >= 1, "--batch-size must be at least 1 (got " + text(c.batch_size) + ")");
  require(c.accumulate >= 1, "--accumulate must be at least 1");
  require(c.lr > 0, "--lr must be positive (got " + text(c.lr) + ")");
  require(c.momentum >= 0 && c.momentum < 1, "--momentum must be in [0, 1)");
  require(c.weight_decay >= 0, "--weight-decay must not be negative");
  require(c.warmup_epochs >= 0, "--warmup-epochs must not be negative");
  require(c.label_smoothing >= 0 && c.label_smoothing < 1, "--label-smoothing must be in [0, 1)");
  require(c.bucket_mb > 0 && c.first_bucket_mb > 0, "--bucket-mb and --first-bucket-mb must be positive");
  require(c.comm_timeout > 0, "--comm-timeout must be positive (seconds)");
  require(c.threads >= 0, "--threads must be 0 (automatic) or positive");
  require(c.blas_threads >= -1, "--blas-threads must be -1 (as the recipe), 0 (as --threads) or positive");
  require(c.loader_threads >= 0, "--loader-threads must not be negative");
  require(c.log_every >= 1, "--log-every must be at least 1");
  require(c.checkpoint_every_steps >= 0 && c.checkpoint_every_epochs >= 0, "checkpoint intervals must not be negative");
  require(c.keep_checkpoints >= 1, "--keep-checkpoints must be at least 1");
  require(!c.data.empty(), "--data is required: the HDF5 file made by cifar_pack");
  require(!c.output.empty(), "--output must name a file");
  require_one_of("optimizer", c.optimizer, {"adam", "sgd"});
  require_one_of("schedule", c.schedule, {"constant", "cosine", "onecycle"});
  require_one_of("normalize", c.normalize, {"recipe", "dataset"});
  require_one_of("backend", c.backend, {"auto", "mpi", "nccl"});
  require_one_of("device", c.device, {"auto", "cpu", "cuda"});
  require_one_of("precision", c.precision, {"fp32", "bf16", "fp16"});
  require(c.nesterov == false || c.optimizer == "sgd", "--nesterov applies to --optimizer sgd only");
  require(c.resume == "none" || c.resume == "auto" || !c.resume.empty(), "--resume: none, auto or a checkpoint path");
  require(c.resume != "auto" || !c.checkpoint_dir.empty(), "--resume auto needs --checkpoint-dir");
}

TrainConfig parse_config(int argc, const char* const argv[]) {
  TrainConfig c;
  po::options_description opts = make_options(c);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
    if (vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      std::ifstream file(path);
      if (!file) throw ConfigError("--config: cannot open '" + path + "' (check the path and permissions)");
      try {
        // Values already on the command line are kept: the command line wins.
        po::store(po::parse_config_file(file, opts, /*allow_unregistered=*/false), vm);
      } catch (const po::error& e) {
        throw ConfigError("config file '" + path + "': " + e.what() + " (run cifar_mpi --help for valid keys)");
      }
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(std::string(e.what()) + " (run cifar_mpi --help for the options)");
  }
  if (!c.help && !c.check_env) {
    try {
      validate(c);
    } catch (const ConfigError& e) {
      if (c.config_file.empty()) throw;
      throw ConfigError(std::string(e.what()) + " (set on the command line or in config file '" + c.config_file + "')");
    }
  }
  return c;
}

std::vector<std::string> TrainConfig::describe() const {
  std::vector<std::string> lines;
  TrainConfig copy = *this;
  visit_options(copy, [&](const char* name, const auto& field, const char*) {
    lines.push_back(strprintf("  %-24s = %s", name, text(field).c_str()));
  });
  return lines;
}

}  // namespace cifar
