// Boost.Program_options front end for RunConfig. Every option is declared
// once, in visit_options(); parsing, --help and the printed configuration all
// come from that one list.
#include "config/run_config.hpp"

#include <unistd.h>

#include <boost/algorithm/string/join.hpp>
#include <boost/program_options.hpp>
#include <boost/range/adaptor/transformed.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace po = boost::program_options;

namespace cifar {

// Boost.Program_options finds these by argument-dependent lookup: the text of
// an enum option is parsed here, once, into its value.
class InvalidChoice : public po::error_with_option_name {
 public:
  InvalidChoice(const std::string& value, const std::string& choices)
      : po::error_with_option_name("the argument ('%value%') for option '%canonical_option%' is not one of: " +
                                   choices) {
    set_substitute("value", value);
  }
};

template <typename E, typename = decltype(ChoiceNames<E>::values)>
void validate(boost::any& out, const std::vector<std::string>& values, E*, int) {
  const std::string& text = po::validators::get_single_string(values);
  const std::optional<E> value = choice_from_string<E>(text);
  if (!value) throw InvalidChoice(text, choice_list<E>(", "));
  out = *value;
}

void validate(boost::any& out, const std::vector<std::string>& values, ResolutionSchedule*, int) {
  out = ResolutionSchedule::parse(po::validators::get_single_string(values));
}

void validate(boost::any& out, const std::vector<std::string>& values, ResumeRequest*, int) {
  out = ResumeRequest::parse(po::validators::get_single_string(values));
}

ResumeRequest ResumeRequest::parse(const std::string& text) {
  if (text == "none") return {Kind::None, ""};
  if (text == "auto") return {Kind::Auto, ""};
  return {Kind::Path, text};
}

std::string ResumeRequest::text() const {
  switch (kind) {
    case Kind::None: return "none";
    case Kind::Auto: return "auto";
    case Kind::Path: return path;
  }
  return "?";
}

namespace {

enum class Section { Data, Model, Training, Optim, Comm, Runtime, Checkpoint, Output };

struct SectionInfo {
  Section section;
  const char* key;    // the INI header: [data]
  const char* title;  // the --help heading
};

constexpr SectionInfo kSections[] = {
    {Section::Data, "data", "Data"},
    {Section::Model, "model", "Model"},
    {Section::Training, "training", "Training"},
    {Section::Optim, "optim", "Optimiser and schedule"},
    {Section::Comm, "comm", "Communication"},
    {Section::Runtime, "runtime", "Devices, threads and speed"},
    {Section::Checkpoint, "checkpoint", "Checkpoints and resume"},
    {Section::Output, "output", "Outputs and progress"},
};

// Whether an option defines the run (see the visit_*_options below).
enum class Binding { DefinesRun, MayChange };
constexpr Binding kDefinesRun = Binding::DefinesRun;
constexpr Binding kMayChange = Binding::MayChange;

// "one of: a, b, c" from a registry's names.
std::string one_of(const std::vector<std::string>& names) { return boost::algorithm::join(names, " | "); }

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// For visits that use no help text (describe, run_definition, the checks of
// numbers): the registries' names only go into the help.
const RegisteredNames kNoNames;

// Every option: its section, its name (command line and INI key), its field,
// whether it defines the run, and its help; one function per section. The
// order is --help's order.
//
// kDefinesRun marks what a checkpoint can only be continued with (docs/checkpoint.md):
// what selects the samples and their order, the inputs, the model, the loss,
// the optimiser and its hyper-parameters. --epochs, --max-steps and
// --target-accuracy are kMayChange: a longer run continues the same one. What is
// evaluated, performance, placement and output options are kMayChange too.
template <typename Visitor>
void visit_data_options(DataConfig& d, const RegisteredNames& names, Visitor&& v) {
  const Section s = Section::Data;
  v(s, "dataset", d.dataset, kDefinesRun, "dataset: " + one_of(names.datasets));
  v(s, "data", d.path, kMayChange,
    "the dataset's file (cifar10: the HDF5 file made by cifar_pack); $CIFAR_DATA when set; a resumed run checks "
    "its content, not its path");
  v(s, "shuffle", d.shuffle, kDefinesRun, "reshuffle the training set every epoch (DistributedSampler semantics)");
  v(s, "shuffle-seed", d.shuffle_seed, kDefinesRun,
    "seed of the sample order, as DistributedSampler's own seed (default 0 there and in the recipe, whatever --seed)");
  v(s, "augment", d.augment, kDefinesRun, "random crop (--crop-pad pixels of padding) and horizontal flip");
  v(s, "flip", d.flip, kDefinesRun,
    "random (each image, each epoch) | alternating (a fixed random half of the images in even epochs, the "
    "other half in odd ones)");
  v(s, "crop-pad", d.crop_pad, kDefinesRun, "padding of the random crop, in pixels (0: flips only)");
  v(s, "crop-padding", d.crop_padding, kDefinesRun, "zero | reflect: what the crop's padding holds");
  v(s, "brightness-jitter", d.brightness_jitter, kDefinesRun,
    "with --augment: add to each normalised image a shift uniform in [-this, this] (0: none)");
  v(s, "contrast-jitter", d.contrast_jitter, kDefinesRun,
    "with --augment: then multiply it by a factor uniform in [1 - this, 1 + this] (0: none)");
  v(s, "drop-last", d.drop_last, kDefinesRun, "drop the tail that does not fill a batch / divide by the world size");
  v(s, "normalize", d.normalize, kDefinesRun,
    "recipe (mean 0.5, std 0.5, as the Python recipe) | dataset (the file's mean/std)");
  v(s, "prefetch-batches", d.prefetch_batches, kMayChange,
    "batches one background thread per rank prepares ahead (0: prepare each batch when it is needed; at most " +
        std::to_string(kMaxPrefetchBatches) + ")");
  v(s, "data-on-device", d.on_device, kMayChange,
    "GPUs: hold the uint8 splits on the device and gather, augment and normalise there (no CPU in the loop)");
  v(s, "resolution-schedule", d.resolution, kDefinesRun,
    "train epochs at smaller sizes: \"24:3,28:3,32\" resizes the whole training image (bilinear, after the "
    "augmentation) to 24 px for epochs 0-2, 28 px for 3-5, then 32 px; evaluation stays at 32 px. Needs a "
    "model that takes any size (--head global-max) (empty: 32 px throughout)");
}

template <typename Visitor>
void visit_model_options(ModelConfig& m, const RegisteredNames& names, Visitor&& v) {
  v(Section::Model, "model", m.name, kDefinesRun, "model: " + one_of(names.models));
  v(Section::Model, "channels-last", m.channels_last, kMayChange,
    "use the channels_last memory format for convolutions");
  v(Section::Model, "head", m.head, kDefinesRun,
    "speed94 models: pool3 (max-pool 3 before the linear layer: 32 px inputs) | global-max (the maximum over the "
    "whole feature map: any input size, as --resolution-schedule needs)");
}

template <typename Visitor>
void visit_training_options(TrainingConfig& t, Visitor&& v) {
  const Section s = Section::Training;
  v(s, "epochs", t.epochs, kMayChange, "training epochs");
  v(s, "max-steps", t.max_steps, kMayChange, "stop after this many optimiser steps (0: no limit)");
  v(s, "bf16-epochs", t.bf16_epochs, kMayChange,
    "in bf16 (given, or chosen by --precision auto): the run's epochs instead of --epochs, for a recipe that wins "
    "back with more steps the accuracy bf16 rounds away (0: --epochs). --epochs or --max-steps on the command line "
    "sets the length in every precision: a config file's bf16-epochs and bf16-max-steps then do not apply");
  v(s, "bf16-max-steps", t.bf16_max_steps, kMayChange,
    "in bf16: the run's --max-steps instead (0: --max-steps; see --bf16-epochs)");
  v(s, "batch-size", t.batch_size, kDefinesRun, "images per rank per micro-batch");
  v(s, "global-batch-size", t.global_batch_size, kDefinesRun,
    "images per micro-batch over all ranks, divided among them (0: --batch-size per rank instead)");
  v(s, "accumulate", t.accumulate, kDefinesRun, "micro-batches per optimiser step (gradient accumulation)");
  v(s, "seed", t.seed, kDefinesRun, "seed for initialisation and augmentation (the recipe's torch.manual_seed)");
  v(s, "label-smoothing", t.label_smoothing, kDefinesRun, "label smoothing for the cross-entropy loss, in [0, 1)");
  v(s, "precision", t.precision, kDefinesRun,
    "fp32 | bf16 (autocast; CPUs and GPUs) | fp16 (autocast and loss scaling; GPUs) | auto (chosen once at "
    "start-up, fp32 or bf16: bf16 on CPUs with AMX bf16 units, on AMD CPUs with AVX-512 BF16 and on GPUs of compute capability 8.0 or above, "
    "fp32 elsewhere; the start-up log says which and why)");
  v(s, "eval", t.eval, kMayChange, "evaluate on the test split after every epoch");
  v(s, "eval-every-epochs", t.eval_every_epochs, kMayChange, "evaluate only every N epochs, and after the last");
  v(s, "tta-fraction", t.tta_fraction, kMayChange,
    "with --tta: only this fraction of the test split, its least confident images, gets the views "
    "(selective TTA; 1: all)");
  v(s, "tta", t.tta, kMayChange,
    "test-time augmentation: none | mirror (average with the mirrored image) | mirror-translate (also "
    "1-pixel translations; the unshifted pair weighs double) | mirror-translate-equal (the same six views at "
    "equal weights)");
  v(s, "target-accuracy", t.target_accuracy, kMayChange,
    "stop once the test accuracy reaches this fraction and print TIME_TO_TARGET; a run that ends below it prints "
    "TARGET_NOT_REACHED (exit code 0) (0: train the full run)");
  v(s, "on-nonfinite", t.on_nonfinite, kMayChange,
    "a step whose averaged gradient is not finite: stop (exit code 5, nothing written after the last good step) | "
    "skip (no update; counted and reported)");
  v(s, "max-loss", t.max_loss, kMayChange,
    "the run fails (exit code 5, nothing of the epoch written) when an epoch's mean training or test loss is above "
    "this or not finite: an exploded run (chance level is ln 10 = 2.3)");
  v(s, "max-skipped-fraction", t.max_skipped_fraction, kMayChange,
    "the run fails (exit code 5, nothing of the epoch written) when more than this fraction of its optimiser steps "
    "so far was skipped by --on-nonfinite skip, in [0, 1] (1: never)");
}

template <typename Visitor>
void visit_optim_options(OptimConfig& o, const RegisteredNames& names, Visitor&& v) {
  const Section s = Section::Optim;
  v(s, "optimizer", o.optimizer, kDefinesRun, "optimiser: " + one_of(names.optimizers));
  v(s, "lr", o.lr, kDefinesRun, "peak learning rate");
  v(s, "momentum", o.momentum, kDefinesRun, "SGD momentum");
  v(s, "nesterov", o.nesterov, kDefinesRun, "SGD with Nesterov momentum");
  v(s, "weight-decay", o.weight_decay, kDefinesRun, "L2 weight decay");
  v(s, "schedule", o.schedule, kDefinesRun, "learning-rate schedule: " + choice_list<ScheduleKind>());
  v(s, "warmup-epochs", o.warmup_epochs, kDefinesRun,
    "linear warm-up before the schedule (epochs, may be fractional); triangle: where it peaks (0: 23% of the run)");
  v(s, "lookahead-every", o.lookahead_every, kDefinesRun,
    "every N optimiser steps, pull the weights towards their running average, more strongly as the run ends, "
    "and end on the average (0: off)");
  v(s, "lookahead-decay", o.lookahead_decay, kDefinesRun,
    "lookahead: average = this x average + (1 - this) x weights at every pull, a constant in (0, 1) (0: the ramp "
    "0.95^N x progress^3)");
  v(s, "lookahead-last-steps", o.lookahead_last_steps, kDefinesRun,
    "lookahead only over the run's last N optimiser steps: the average starts as the weights there, pulls follow "
    "every --lookahead-every steps (0: the whole run)");
  v(s, "lr-tail-epochs", o.lr_tail_epochs, kDefinesRun,
    "a low-rate tail: the schedule (and Muon's progress) ends this many epochs before the last step, and the rate "
    "holds at --lr-floor x the peak after it (0: no tail)");
  v(s, "lr-floor", o.lr_floor, kDefinesRun,
    "the schedule's rate never falls below this fraction of the peak, in [0, 1) (0: no floor)");
  v(s, "fused-optimizer", o.fused, kMayChange,
    "Adam/SGD with the learning rate and step count in device tensors, stepped by ATen's fused multi-tensor "
    "kernels (LibTorch >= 2.4; plain tensor math before): the optimiser a CUDA graph can capture. Equal to the "
    "default one to rounding, same checkpoints; --cuda-graphs true implies it");
  v(s, "muon-lr", o.muon_lr, kDefinesRun,
    "--optimizer muon: peak learning rate of the orthogonalised filters (and matrices)");
  v(s, "muon-momentum", o.muon_momentum, kDefinesRun, "--optimizer muon: momentum of the orthogonalised parameters");
  v(s, "muon-weight-decay", o.muon_weight_decay, kDefinesRun,
    "--optimizer muon: decoupled weight decay of the orthogonalised parameters (p *= 1 - lr x this)");
  v(s, "muon-matrices", o.muon_matrices, kDefinesRun,
    "--optimizer muon: orthogonalise the 2-d weight matrices too (default: the 4-d convolution filters only, as "
    "the record recipes)");
}

template <typename Visitor>
void visit_comm_options(CommConfig& c, const RegisteredNames& names, Visitor&& v) {
  const Section s = Section::Comm;
  v(s, "backend", c.backend, kMayChange,
    "gradient all-reduce: auto (nccl on GPUs, mpi on CPUs) | " + one_of(names.backends));
  v(s, "bucket-mb", c.bucket_mb, kMayChange, "gradient bucket size in MiB (all buckets but the first)");
  v(s, "first-bucket-mb", c.first_bucket_mb, kMayChange,
    "size of the first gradient bucket in MiB (starts communication early)");
  v(s, "comm-timeout", c.timeout_seconds, kMayChange, "seconds a collective may take before the job is ended");
  v(s, "startup-timeout", c.startup_timeout_seconds, kMayChange,
    "seconds each start-up stage may take (MPI's start, reading the options and the data, NCCL's set-up, ...) "
    "before the job is ended: a rank that died or hangs before the first step stops the job, not its time limit");
  v(s, "allow-socket-network", c.allow_socket_network, kMayChange,
    "let a multi-node NCCL job run when NCCL chose TCP sockets between the nodes (refused by default: several "
    "times slower than InfiniBand or RoCE)");
}

template <typename Visitor>
void visit_runtime_options(RuntimeConfig& r, Visitor&& v) {
  const Section s = Section::Runtime;
  v(s, "device", r.device, kMayChange, "auto | cpu | cuda (cuda:<local rank>)");
  v(s, "threads", r.threads, kMayChange,
    "intra-op threads per rank (0: the cores this rank owns / ranks sharing them; at most " +
        std::to_string(kThreadsPerCpu) + " per CPU of the node)");
  v(s, "blas-threads", r.blas_threads, kMayChange,
    "OpenBLAS threads per rank for the linear layers, whose results depend on the count (0: as --threads; "
    "-1: every CPU of the node, however the rank is bound, as the Python recipe's processes get them, for its "
    "exact numbers). $OMP_NUM_THREADS and $OPENBLAS_NUM_THREADS are not read: the options alone decide");
  v(s, "bind-numa", r.bind_numa, kMayChange,
    "auto: a rank on a GPU that its launcher left on every CPU is bound to the CPUs of its GPU's NUMA node (shared "
    "out among the node's ranks there), before the thread pools are sized | false: never bind");
  v(s, "retain-memory", r.retain_memory, kMayChange,
    "keep freed memory in the process for reuse (no per-step page faults; glibc mallopt)");
  v(s, "deterministic", r.deterministic, kMayChange,
    "GPUs: deterministic cuDNN algorithms, no autotuning (repeatable runs and exact resumes; slower)");
  v(s, "profile", r.profile, kMayChange,
    "print per-epoch shares of data, forward, backward, communication and optimiser time");
  v(s, "cuda-graphs", r.cuda_graphs, kMayChange,
    "GPUs, NCCL: after warm-up, capture forward, loss, backward, the gradient all-reduce and the optimiser step as "
    "one CUDA graph and replay it for every full batch (docs/gpu.md). Off by default: compare its images/s "
    "with eager steps' on your GPU first");
}

template <typename Visitor>
void visit_checkpoint_options(CheckpointConfig& c, Visitor&& v) {
  const Section s = Section::Checkpoint;
  v(s, "checkpoint-dir", c.dir, kMayChange, "folder for checkpoints, one run's only (empty: no checkpoints)");
  v(s, "checkpoint-every-steps", c.every_steps, kMayChange, "also checkpoint every N optimiser steps (0: off)");
  v(s, "checkpoint-every-epochs", c.every_epochs, kMayChange, "checkpoint every N epochs (0: only at the end)");
  v(s, "keep-checkpoints", c.keep, kMayChange,
    "how many recent checkpoints of this run to keep (another run's are never deleted)");
  v(s, "resume", c.resume, kMayChange, "none | auto (newest complete checkpoint in --checkpoint-dir) | PATH");
  // kMayChange: a choice made when resuming, not part of what the run is; the
  // global batch it leads to is recorded in the checkpoint.
  v(s, "elastic-batch", c.elastic_batch, kMayChange,
    "resuming at another world size: global (keep the global batch per optimiser step: the per-rank batch "
    "becomes its share, with gradient accumulation when that does not divide; refused when the world size does "
    "not divide it) | per-rank (keep --batch-size and --accumulate per rank: the global batch becomes batch x "
    "ranks x accumulate and the learning rate scales with it, lr x new / original global batch)");
}

template <typename Visitor>
void visit_output_options(OutputConfig& o, Visitor&& v) {
  const Section s = Section::Output;
  v(s, "output", o.model, kMayChange, "model file written by rank 0 at the end (loads in Python with torch.load)");
  v(s, "metrics", o.metrics, kMayChange, "per-epoch metrics file, JSON Lines (empty: none)");
  v(s, "tensorboard", o.tensorboard, kMayChange,
    "folder for TensorBoard event files: loss, learning rate and images/s every --log-every batches, losses, "
    "accuracy and time every epoch (empty: none)");
  v(s, "log-every", o.log_every, kMayChange, "print a progress line every N batches");
}

template <typename Visitor>
void visit_options(RunConfig& c, const RegisteredNames& names, Visitor&& v) {
  visit_data_options(c.data, names, v);
  visit_model_options(c.model, names, v);
  visit_training_options(c.training, v);
  visit_optim_options(c.optim, names, v);
  visit_comm_options(c.comm, names, v);
  visit_runtime_options(c.runtime, v);
  visit_checkpoint_options(c.checkpoint, v);
  visit_output_options(c.output, v);
}

std::string text(const std::string& s) { return s.empty() ? "\"\"" : s; }
std::string text(bool b) { return b ? "true" : "false"; }
std::string text(const ResumeRequest& r) { return r.text(); }
std::string text(const ResolutionSchedule& r) { return text(r.text()); }
// The shortest text that reads back as the same double: 0.001, not
// 0.0010000000000000000208, yet 0.0012345678 and 0.0012345679 stay apart
// (a resumed run compares these texts).
std::string text(double v) {
  char buffer[32];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, v);
    if (std::strtod(buffer, nullptr) == v) break;
  }
  return buffer;
}
template <typename T>
std::string text(const T& v) {
  if constexpr (std::is_enum_v<T>) {
    return to_string(v);
  } else {
    std::ostringstream os;
    os << v;
    return os.str();
  }
}

// Options kept so that older command lines and INI files still run.
constexpr const char* kLegacyLoaderThreads = "loader-threads";

// The options, one group per section in --help, and the INI section of each key.
struct Options {
  po::options_description all{"Options (also valid as `key = value` lines in the --config INI file)"};
  std::map<std::string, Section> section_of;
  std::vector<std::string> keys;  // the sections' options, in --help order: what a file may set
};

// Options only the command line takes: what to do instead of training and
// which file to read. A file setting them was taken at its word
// (`check-env = true` turned a run into a check) or ignored (`config`).
const std::vector<std::string> kCommandLineOnly = {"help", "config", "check-env", "strict", "self-test"};

std::unique_ptr<Options> make_options(RunConfig& c, const RegisteredNames& names) {
  auto o = std::make_unique<Options>();
  po::options_description general("General");
  general.add_options()("help,h", po::bool_switch(&c.help), "print this help and exit")(
      "config", po::value<std::string>(&c.config_file),
      "INI file of options, or an installed config by name (default, resnet18, smoke, speed94); the command "
      "line wins, and the file's values are checked all the same. --help, --config, --check-env, --strict and "
      "--self-test are command-line options only")(
      "check-env", po::bool_switch(&c.check_env),
      "print each rank's placement, the library versions and a warning with its fix for each placement problem, "
      "then exit (non-zero if the world cannot train)")(
      "strict", po::bool_switch(&c.strict),
      "with --check-env: placement warnings are errors (exit 1), for job scripts")(
      "self-test", po::bool_switch(&c.self_test),
      "train a few steps of each GPU and CPU path on tiny synthetic data (no data file needed), each single-rank "
      "path as a child process of every rank, then the multi-rank paths over all ranks; print a table (PASS, FAIL "
      "with its first error line, SKIP with the reason) and exit 0 when nothing failed, 8 otherwise. Of the other "
      "options --device, --threads, --comm-timeout and --startup-timeout apply");
  o->all.add(general);
  std::map<Section, po::options_description> groups;
  for (const auto& s : kSections)
    groups.emplace(s.section, po::options_description(s.title + std::string(" [") + s.key + "]"));
  visit_options(c, names, [&](Section section, const char* name, auto& field, Binding, const std::string& help) {
    using T = std::decay_t<decltype(field)>;
    groups.at(section).add_options()(name, po::value<T>(&field)->default_value(field, text(field)), help.c_str());
    o->section_of[name] = section;
    o->keys.emplace_back(name);
  });
  for (const auto& s : kSections) o->all.add(groups.at(s.section));
  po::options_description legacy("Kept for older command lines");
  legacy.add_options()(kLegacyLoaderThreads, po::value<int>(),
                       "0: as --prefetch-batches 0; 1 or more: background preparation (the default)");
  o->all.add(legacy);
  return o;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

void require_one_of(const std::string& key, const std::string& value, const std::vector<std::string>& allowed) {
  for (const auto& a : allowed)
    if (value == a) return;
  throw ConfigError("--" + key + ": '" + value + "' is not one of: " + boost::algorithm::join(allowed, ", "));
}

// A config file is small text: refuse what could hang (a FIFO) or exhaust
// memory (/dev/zero) before reading it.
constexpr long long kMaxConfigBytes = 1 << 20;

std::string read_config_text(const std::string& path) {
  const paths::FileCheck check = paths::check_regular_file(path, kMaxConfigBytes);
  if (check.problem == paths::FileProblem::Missing)
    throw ConfigError("--config: cannot open '" + path + "': no such file (check the path)");
  if (!check) throw ConfigError("--config: '" + path + "' " + check.reason + "; a config file is a small text file");
  std::ifstream file(path);
  if (!file) throw ConfigError("--config: cannot open '" + path + "' (check the permissions)");
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// A config's name: "default" for default.ini.
std::string config_name(const std::string& file) {
  const std::string name = paths::file_name(file);
  return name.size() > 4 && name.compare(name.size() - 4, 4, ".ini") == 0 ? name.substr(0, name.size() - 4) : name;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// Edits (insertions, deletions, substitutions, swaps of neighbours) from a to
// b, case and '_' against '-' not counted: batch_size is one name off.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  const auto fold = [](char ch) {
    return ch == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  };
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const bool same = fold(a[i - 1]) == fold(b[j - 1]);
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The name a mistyped one most likely meant, for "did you mean": the nearest
// within a few edits (more for longer names), else the only name it begins,
// which is what Boost's prefix guessing took before names had to be exact
// (`--epoch` for --epochs); "" when none is near. Used for command-line
// options and INI keys alike. The distance is only computed where the
// lengths allow a match, so a huge word costs nothing.
std::string nearest_name(const std::string& word, const std::vector<std::string>& names) {
  const std::size_t max_edits = word.size() <= 4 ? 1 : word.size() <= 8 ? 2 : 3;
  std::string best;
  std::size_t best_edits = max_edits + 1;
  for (const auto& name : names) {
    const std::size_t gap = name.size() > word.size() ? name.size() - word.size() : word.size() - name.size();
    if (gap > max_edits) continue;
    const std::size_t edits = edit_distance(word, name);
    if (edits < best_edits) best = name, best_edits = edits;
  }
  if (!best.empty() || word.empty()) return best;
  for (const auto& name : names) {
    if (name.compare(0, word.size(), word) != 0) continue;
    if (!best.empty()) return "";  // the start of several names
    best = name;
  }
  return best;
}

// One `key = value` line of the file, on its own: an unknown key (with the
// nearest one), a command-line-only option, or a value its option cannot
// read, each named with the file's line. The value is read here because the
// file's store skips a key the command line already set without reading its
// value: `lr = abc` passed whenever --lr was given.
void check_ini_line(const std::string& line, const std::string& where, const Options& options) {
  // As Boost reads the line: it ends at '#', the key is what precedes '='.
  const std::string content = trim(line.substr(0, line.find('#')));
  const auto equals = content.find('=');
  if (equals != std::string::npos) {
    const std::string key = trim(content.substr(0, equals));
    require(!contains(kCommandLineOnly, key), where + ": '" + key + "' is a command-line option only");
    if (!options.all.find_nothrow(key, /*approx=*/false)) {
      const std::string hint = nearest_name(key, options.keys);
      throw ConfigError(where + ": unknown key '" + key + "'" +
                        (hint.empty() ? " (run cifar_mpi --help for valid keys)" : "; did you mean '" + hint + "'?"));
    }
  }
  std::istringstream one(line + "\n");
  po::variables_map scratch;  // never notified: nothing is written into the config
  try {
    po::store(po::parse_config_file(one, options.all, /*allow_unregistered=*/false), scratch);
  } catch (const po::error& e) {
    throw ConfigError(where + ": " + e.what());
  }
}

// The INI file as flat `key = value` lines for Boost, each line checked on its
// own first (check_ini_line). A `[section]` header is optional; under one,
// every key must belong to that section, so a file that groups its keys is
// checked against the grouping.
std::string flatten_ini(const std::string& path, const std::string& text, const Options& options) {
  std::istringstream in(text);
  std::ostringstream flat;
  std::string line, section;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string t = trim(line);
    const std::string where = path + ":" + std::to_string(number);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t.front() == '[') {
      section = trim(t.substr(1, t.find(']') == std::string::npos ? std::string::npos : t.find(']') - 1));
      bool known = false;
      for (const auto& s : kSections) known = known || section == s.key;
      const std::string names = boost::algorithm::join(
          kSections | boost::adaptors::transformed([](const SectionInfo& s) { return std::string(s.key); }), ", ");
      require(known && t.back() == ']', where + ": unknown section '" + t + "'; sections are " + names);
      continue;
    }
    const std::string key = trim(t.substr(0, t.find('=')));
    const auto it = options.section_of.find(key);
    if (!section.empty() && it != options.section_of.end()) {
      for (const auto& s : kSections)
        require(s.section != it->second || section == s.key,
                where + ": '" + key + "' belongs to section [" + s.key + "], not [" + section + "]");
    }
    check_ini_line(t, "config file " + path + " line " + std::to_string(number), options);
    flat << t << "\n";
  }
  return flat.str();
}

// Options given on the command line or in the file that the rest of the
// configuration leaves without effect: each is said at start-up, never
// accepted in silence (a user who set it expects it to act).
std::vector<std::string> inert_options(const po::variables_map& vm, const RunConfig& c) {
  auto given = [&](const char* key) { return vm.count(key) > 0 && !vm[key].defaulted(); };
  std::vector<std::string> notes;
  auto note_each = [&](std::initializer_list<const char*> keys, bool inert, const std::string& why) {
    if (!inert) return;
    for (const char* key : keys)
      if (given(key)) notes.push_back(std::string("--") + key + " has no effect " + why);
  };
  note_each({"tta-fraction"}, c.training.tta == TtaMode::None, "without --tta (it is none)");
  note_each({"tta", "tta-fraction", "eval-every-epochs"}, !c.training.eval, "with --eval false (nothing is evaluated)");
  note_each({"muon-lr", "muon-momentum", "muon-weight-decay", "muon-matrices"}, c.optim.optimizer != "muon",
            "without --optimizer muon (it is " + c.optim.optimizer + ")");
  note_each({"brightness-jitter", "contrast-jitter"}, !c.data.augment, "without --augment true");
  note_each({"lookahead-decay", "lookahead-last-steps"}, c.optim.lookahead_every == 0,
            "without --lookahead-every (it is 0)");
  note_each({"bf16-epochs", "bf16-max-steps"},
            c.training.precision != Precision::Bf16 && c.training.precision != Precision::Auto,
            "with --precision " + text(c.training.precision) + " (it applies in bf16)");
  note_each({"fused-optimizer"}, c.optim.optimizer == "muon" && c.optim.fused,
            "with --optimizer muon, which has no fused form");
  return notes;
}

// A length given on the command line (--epochs, --max-steps) is the run's
// in every precision: a config file's bf16 length would otherwise turn
// `--config e1_cpu.ini --max-steps 20` into a full run in bf16. The bf16
// keys the command line does not give itself are dropped.
void keep_command_line_length(const po::parsed_options& command_line, TrainingConfig& t) {
  const auto given = [&](const char* key) {
    return std::any_of(command_line.options.begin(), command_line.options.end(),
                       [&](const po::option& o) { return o.string_key == key; });
  };
  if (!given("epochs") && !given("max-steps")) return;
  if (!given("bf16-epochs")) t.bf16_epochs = 0;
  if (!given("bf16-max-steps")) t.bf16_max_steps = 0;
}

void apply_legacy_options(const po::variables_map& vm, RunConfig& c) {
  if (!vm.count(kLegacyLoaderThreads)) return;
  const int threads = vm[kLegacyLoaderThreads].as<int>();
  require(threads >= 0, "--loader-threads must not be negative");
  if (threads == 0) c.data.prefetch_batches = 0;
}

// Boost.Program_options (1.74) builds its error messages from templates with
// placeholders such as %canonical_option% and replaces each one until none is
// left. An option name or value holding its own placeholder made that loop
// run forever, its memory growing (`cifar_mpi --x%canonical_option%`; found
// by the config fuzz harness, tests/fuzz/regression/config). Such text is
// refused, naming where it is, before the parser sees it.
void refuse_parser_placeholders(const std::string& text, const std::string& where) {
  static const std::regex kPlaceholder("%[A-Za-z_]+%");
  std::smatch match;
  if (std::regex_search(text, match, kPlaceholder))
    throw ConfigError(where + " holds '" + match.str() +
                      "', which the option parser cannot report errors for (it would expand it forever); remove it");
}

void refuse_parser_placeholders(int argc, const char* const argv[]) {
  for (int i = 1; i < argc; ++i)
    refuse_parser_placeholders(argv[i], strprintf("command-line argument %d ('%s')", i, argv[i]));
}

void refuse_parser_placeholders_in_file(const std::string& path, const std::string& text) {
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number)
    refuse_parser_placeholders(line, "config file " + path + ":" + std::to_string(number));
}

// Option names must be given in full: Boost's default style guesses from a
// prefix (`--epoch 3` ran as --epochs 3), so a typo or a future option with
// the same start could change what a command line means.
constexpr int kCommandLineStyle = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;

// Unknown options are kept (allow_unregistered) to be named with the nearest
// option by refuse_unknown_and_stray_arguments.
po::parsed_options parse_command_line(const std::vector<std::string>& args, const Options& options) {
  return po::command_line_parser(args).options(options.all).style(kCommandLineStyle).allow_unregistered().run();
}

std::vector<std::string> command_line_names(const Options& options) {
  std::vector<std::string> names = kCommandLineOnly;
  names.insert(names.end(), options.keys.begin(), options.keys.end());
  return names;
}

// What Boost does not refuse by itself. A word no option takes (`--lr 0.1
// 0.05`, or a bare `train`) becomes a positional argument that store() drops,
// so the run went on as if it were not there; an unknown option is named with
// the option it is nearest to. Unknown options first: `--epoch 3` leaves a
// stray `3` behind, and the option is the mistake.
void refuse_unknown_and_stray_arguments(const po::parsed_options& parsed, const Options& options) {
  for (const auto& o : parsed.options) {
    if (!o.unregistered) continue;
    const std::string token = o.original_tokens.empty() ? o.string_key : o.original_tokens.front();
    const std::string shown = token.substr(0, token.find('='));
    const std::string hint =
        nearest_name(shown.substr(std::min(shown.find_first_not_of('-'), shown.size())), command_line_names(options));
    throw ConfigError("unknown option " + shown +
                      (hint.empty() ? " (run cifar_mpi --help for the options)" : "; did you mean --" + hint + "?"));
  }
  for (std::size_t i = 0; i < parsed.options.size(); ++i) {
    const po::option& o = parsed.options[i];
    if (o.position_key < 0) continue;
    const std::string word =
        o.original_tokens.empty() ? boost::algorithm::join(o.value, " ") : o.original_tokens.front();
    if (i == 0)
      throw ConfigError("unexpected argument '" + word +
                        "': arguments are options, --name value or --name=value (run cifar_mpi --help for the "
                        "options)");
    const po::option& before = parsed.options[i - 1];
    throw ConfigError("unexpected argument '" + word + "' after " +
                      boost::algorithm::join(before.original_tokens, " ") +
                      (before.value.empty() ? ", which takes no value" : ": each option takes one value"));
  }
}

}  // namespace

std::string config_help(const RegisteredNames& names) {
  RunConfig defaults;
  std::ostringstream os;
  os << "cifar_mpi — data-parallel CIFAR-10 training with MPI, NCCL and LibTorch\n\n"
        "Usage:  mpirun -np N cifar_mpi [--config config/default.ini] [--option value ...]\n"
        "        srun --mpi=pmix cifar_mpi ...      (one rank per GPU, or per CPU slot)\n\n"
     << make_options(defaults, names)->all
     << "\nExit codes: 0 done, 1 runtime failure (a restart may help), 2 bad configuration, 3 preempted "
        "(checkpoint written; resume with --resume auto), 4 communication timeout, 5 diverged (a non-finite gradient "
        "with --on-nonfinite stop, or an epoch past --max-loss or --max-skipped-fraction; nothing written after the "
        "last good step), 6 bad input (a data file, checkpoint or model file missing, damaged or another run's: a "
        "restart cannot fix it), 7 a node failed its checks before training (the nodes at fault are named; restart "
        "without them).\n";
  return os.str();
}

namespace {

// Every floating-point option must be finite: inf passes "> 0" and then turns
// into inf and NaN in the model and the metrics (--lr inf, --weight-decay inf).
void validate_finite(const RunConfig& c) {
  RunConfig copy = c;
  visit_options(copy, kNoNames, [](Section, const char* name, const auto& field, Binding, const std::string&) {
    if constexpr (std::is_floating_point_v<std::decay_t<decltype(field)>>)
      require(std::isfinite(field), std::string("--") + name + " must be a finite number (got " + text(field) + ")");
  });
}

// The checks of the run's length against what is counted in epochs.
void validate_length(const RunConfig& c) {
  const TrainingConfig& t = c.training;
  const OptimConfig& o = c.optim;
  require(t.epochs >= 1, "--epochs must be at least 1 (got " + text(t.epochs) + ")");
  require(t.max_steps >= 0, "--max-steps must be 0 (no limit) or positive");
  require(o.warmup_epochs >= 0 && o.warmup_epochs <= t.epochs,
          "--warmup-epochs must be between 0 and --epochs (" + text(t.epochs) + "), got " + text(o.warmup_epochs));
  require(
      o.lr_tail_epochs >= 0 && o.lr_tail_epochs < t.epochs,
      "--lr-tail-epochs must be at least 0 and below --epochs (" + text(t.epochs) + "), got " + text(o.lr_tail_epochs));
  require(c.data.resolution.counted_epochs() < t.epochs,
          strprintf("--resolution-schedule %s: its sizes before the last take %lld epoch(s), but the run has %d "
                    "(--epochs): it would never train at %d px, its last size; shorten those stages or train longer",
                    c.data.resolution.text().c_str(), static_cast<long long>(c.data.resolution.counted_epochs()),
                    t.epochs, c.data.resolution.final_size));
}

// Whether the run has a length of its own in bf16 (--bf16-epochs, --bf16-max-steps).
bool has_bf16_length(const TrainingConfig& t) { return t.bf16_epochs > 0 || t.bf16_max_steps > 0; }

// The length in every precision the run may train in: as given, and in bf16.
void validate_lengths(const RunConfig& c) {
  validate_length(c);
  const TrainingConfig& t = c.training;
  require(t.bf16_epochs >= 0, "--bf16-epochs must be 0 (as --epochs) or positive (got " + text(t.bf16_epochs) + ")");
  require(t.bf16_max_steps >= 0, "--bf16-max-steps must be 0 (as --max-steps) or positive");
  if (!has_bf16_length(t)) return;
  RunConfig bf16 = c;
  bf16.training = trained_length(t, Precision::Bf16);
  try {
    validate_length(bf16);
  } catch (const ConfigError& e) {
    throw ConfigError(
        strprintf("in bf16 (--bf16-epochs %d, --bf16-max-steps %ld): %s", t.bf16_epochs, t.bf16_max_steps, e.what()));
  }
}

void validate_training(const TrainingConfig& t, const OptimConfig& o, const RegisteredNames& names) {
  require(t.batch_size >= 1, "--batch-size must be at least 1 (got " + text(t.batch_size) + ")");
  require(t.accumulate >= 1, "--accumulate must be at least 1");
  require(t.global_batch_size >= 0, "--global-batch-size must be 0 (use --batch-size) or positive");
  require(t.eval_every_epochs >= 1, "--eval-every-epochs must be at least 1");
  require(t.label_smoothing >= 0 && t.label_smoothing < 1, "--label-smoothing must be in [0, 1)");
  require(t.tta_fraction > 0 && t.tta_fraction <= 1, "--tta-fraction must be in (0, 1]");
  require(t.target_accuracy >= 0 && t.target_accuracy <= 1, "--target-accuracy must be in [0, 1]");
  require(t.target_accuracy == 0 || t.eval, "--target-accuracy needs --eval true (the test accuracy decides)");
  require(t.max_loss > 0, "--max-loss must be positive (got " + text(t.max_loss) + ")");
  require(t.max_skipped_fraction >= 0 && t.max_skipped_fraction <= 1,
          "--max-skipped-fraction must be in [0, 1] (got " + text(t.max_skipped_fraction) + ")");
  require(o.lr > 0, "--lr must be positive (got " + text(o.lr) + ")");
  require(o.momentum >= 0 && o.momentum < 1, "--momentum must be in [0, 1)");
  require(o.weight_decay >= 0, "--weight-decay must not be negative");
  require(o.lookahead_every >= 0, "--lookahead-every must be 0 (off) or positive");
  require(o.lookahead_decay >= 0 && o.lookahead_decay < 1, "--lookahead-decay must be in [0, 1) (0: the ramp)");
  require(o.lookahead_last_steps >= 0, "--lookahead-last-steps must be 0 (the whole run) or positive");
  require(o.lr_floor >= 0 && o.lr_floor < 1, "--lr-floor must be in [0, 1) (got " + text(o.lr_floor) + ")");
  require(o.muon_lr > 0, "--muon-lr must be positive (got " + text(o.muon_lr) + ")");
  require(o.muon_momentum >= 0 && o.muon_momentum < 1, "--muon-momentum must be in [0, 1)");
  require(o.muon_weight_decay >= 0, "--muon-weight-decay must not be negative");
  require(!o.nesterov || contains(names.nesterov_optimizers, o.optimizer),
          "--nesterov applies to --optimizer " + one_of(names.nesterov_optimizers) + " only");
}

// Upper limits of counts and sizes: a value past them is a typo or an attack,
// and would exhaust threads or memory before failing anywhere useful.
void validate_limits(const RunConfig& c) {
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const long max_threads = kThreadsPerCpu * cpus;
  require(c.runtime.threads >= 0 && c.runtime.threads <= max_threads,
          strprintf("--threads must be 0 (automatic) or up to %ld (%d per CPU; this node has %ld), got %d", max_threads,
                    kThreadsPerCpu, cpus, c.runtime.threads));
  require(c.runtime.blas_threads >= -1 && c.runtime.blas_threads <= max_threads,
          strprintf("--blas-threads must be -1 (as the recipe), 0 (as --threads) or up to %ld (%d per CPU), got %d",
                    max_threads, kThreadsPerCpu, c.runtime.blas_threads));
  require(c.data.crop_pad >= 0 && c.data.crop_pad <= 16, "--crop-pad must be in [0, 16]");
  require(
      c.data.prefetch_batches >= 0 && c.data.prefetch_batches <= kMaxPrefetchBatches,
      strprintf("--prefetch-batches must be between 0 and %d, got %d", kMaxPrefetchBatches, c.data.prefetch_batches));
  for (const auto& [name, mb] :
       {std::pair<const char*, double>{"bucket-mb", c.comm.bucket_mb}, {"first-bucket-mb", c.comm.first_bucket_mb}})
    require(mb > 0 && mb <= kMaxBucketMb,
            strprintf("--%s must be positive and at most %.0f (1 TiB), got %s", name, kMaxBucketMb, text(mb).c_str()));
  for (const auto& [name, seconds] : {std::pair<const char*, double>{"comm-timeout", c.comm.timeout_seconds},
                                      {"startup-timeout", c.comm.startup_timeout_seconds}})
    require(seconds > 0 && seconds <= kMaxCommTimeoutSeconds,
            strprintf("--%s must be positive and at most %.0f seconds (a week), got %s", name, kMaxCommTimeoutSeconds,
                      text(seconds).c_str()));
}

void validate_names_and_paths(const RunConfig& c, const RegisteredNames& names) {
  require(!c.data.path.empty(), "--data is required: the HDF5 file made by cifar_pack");
  require(!c.output.model.empty(), "--output must name a file");
  require_one_of("dataset", c.data.dataset, names.datasets);
  require_one_of("model", c.model.name, names.models);
  require_one_of("optimizer", c.optim.optimizer, names.optimizers);
  std::vector<std::string> backends = {"auto"};
  backends.insert(backends.end(), names.backends.begin(), names.backends.end());
  require_one_of("backend", c.comm.backend, backends);
  require(c.checkpoint.resume.kind != ResumeRequest::Kind::Path || !c.checkpoint.resume.path.empty(),
          "--resume: none, auto or a checkpoint path");
  require(c.checkpoint.resume.kind != ResumeRequest::Kind::Auto || c.checkpoint.enabled(),
          "--resume auto needs --checkpoint-dir");
}

}  // namespace

void validate(const RunConfig& c, const RegisteredNames& names) {
  validate_finite(c);
  validate_training(c.training, c.optim, names);
  validate_lengths(c);
  validate_limits(c);
  require(c.output.log_every >= 1, "--log-every must be at least 1");
  require(c.checkpoint.every_steps >= 0,
          "--checkpoint-every-steps must not be negative (0: off), got " + text(c.checkpoint.every_steps));
  require(c.checkpoint.every_epochs >= 0, "--checkpoint-every-epochs must not be negative (0: only at the end), got " +
                                              text(c.checkpoint.every_epochs));
  require(c.checkpoint.keep >= 1, "--keep-checkpoints must be at least 1");
  require(c.data.brightness_jitter >= 0 && c.data.contrast_jitter >= 0 && c.data.contrast_jitter < 1,
          "--brightness-jitter must not be negative and --contrast-jitter must be in [0, 1)");
  require(c.data.resolution.empty() || c.model.head == HeadKind::GlobalMax,
          "--resolution-schedule trains at sizes other than 32 px: it needs --head global-max, whose pooling takes "
          "any size");
  validate_names_and_paths(c, names);
}

std::vector<std::string> config_folders() {
  std::vector<std::string> folders;
  const char* home = std::getenv("CIFAR_MPI_HOME");
  if (home && *home) folders.push_back(paths::join(home, kInstalledConfigDir));
  // <prefix>/bin/cifar_mpi -> <prefix>/share/cifar_mpi/config
  const std::string bin = paths::parent(paths::executable());
  if (!bin.empty()) folders.push_back(paths::join(paths::parent(bin), kInstalledConfigDir));
  return folders;
}

std::string resolve_config_file(const std::string& name, const std::vector<std::string>& folders) {
  if (paths::exists(name) || name.find('/') != std::string::npos || name.empty()) return name;
  const bool has_ext = config_name(name) != name;
  std::string searched, known;
  for (const auto& folder : folders) {
    const std::string file = paths::join(folder, has_ext ? name : name + ".ini");
    if (paths::is_regular_file(file)) return file;
    searched += (searched.empty() ? "" : ", ") + folder;
    if (!paths::is_directory(folder)) continue;
    for (const auto& entry : paths::list(folder))
      if (config_name(entry) != entry) known += (known.empty() ? "" : ", ") + config_name(entry);
  }
  throw ConfigError("--config: cannot open '" + name + "': no such file here, and no installed config of that name " +
                    "(searched " + (searched.empty() ? std::string("no folder") : searched) +
                    "; configs there: " + (known.empty() ? std::string("none") : known) +
                    "). Give a path, or set CIFAR_MPI_HOME to the install prefix (module load cifar_mpi does)");
}

double startup_timeout_on_command_line(int argc, const char* const argv[]) {
  const std::string option = "--startup-timeout";
  double seconds = kDefaultStartupTimeoutSeconds;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string value;
    if (arg == option && i + 1 < argc) {
      value = argv[i + 1];
    } else if (arg.rfind(option + "=", 0) == 0) {
      value = arg.substr(option.size() + 1);
    } else {
      continue;
    }
    char* end = nullptr;
    const double parsed = std::strtod(value.c_str(), &end);
    // A bad value keeps the default here; the reading of the options refuses it.
    if (!value.empty() && *end == '\0' && parsed > 0 && parsed <= kMaxCommTimeoutSeconds) seconds = parsed;
  }
  return seconds;
}

RunConfig parse_config(int argc, const char* const argv[], const RegisteredNames& names) {
  RunConfig c;
  const auto options = make_options(c, names);
  po::variables_map vm;
  std::string config_path;  // the file --config named
  refuse_parser_placeholders(argc, argv);
  try {
    const po::parsed_options command_line = parse_command_line({argv + 1, argv + std::max(argc, 1)}, *options);
    refuse_unknown_and_stray_arguments(command_line, *options);
    po::store(command_line, vm);
    // Stored after the command line and before the file: each store keeps the values already set.
    const char* data = std::getenv("CIFAR_DATA");
    if (data && *data) {
      refuse_parser_placeholders(data, "CIFAR_DATA");
      po::store(parse_command_line({"--data", data}, *options), vm);
    }
    if (vm.count("config")) {
      config_path = resolve_config_file(vm["config"].as<std::string>(), config_folders());
      const std::string& path = config_path;
      const std::string text = read_config_text(path);
      refuse_parser_placeholders_in_file(path, text);
      std::istringstream flat(flatten_ini(path, text, *options));
      try {
        // Values already on the command line are kept: the command line wins.
        po::store(po::parse_config_file(flat, options->all, /*allow_unregistered=*/false), vm);
      } catch (const po::error& e) {
        throw ConfigError("config file '" + path + "': " + e.what() + " (run cifar_mpi --help for valid keys)");
      }
    }
    po::notify(vm);
    keep_command_line_length(command_line, c.training);
  } catch (const po::error& e) {
    throw ConfigError(std::string(e.what()) + " (run cifar_mpi --help for the options)");
  }
  if (!config_path.empty()) c.config_file = config_path;  // the file, also when --config gave a name
  require(!c.strict || c.check_env, "--strict applies to --check-env only (add --check-env, or drop --strict)");
  require(!c.self_test || !c.check_env, "--self-test and --check-env are two runs: give one of them");
  // --check-env validates like a run does: a pre-flight check must refuse what the run would.
  if (c.help) return c;
  try {
    apply_legacy_options(vm, c);
    validate(c, names);
    c.inert_options = inert_options(vm, c);
  } catch (const ConfigError& e) {
    if (c.config_file.empty()) throw;
    throw ConfigError(std::string(e.what()) + " (set on the command line or in config file '" + c.config_file + "')");
  }
  return c;
}

OptimConfig built_optimizer_config(const RunConfig& config) {
  OptimConfig optim = config.optim;
  optim.fused = optim.fused || config.runtime.cuda_graphs;
  return optim;
}

TrainingConfig trained_length(const TrainingConfig& training, Precision trained) {
  TrainingConfig t = training;
  if (trained != Precision::Bf16) return t;
  if (t.bf16_epochs > 0) t.epochs = t.bf16_epochs;
  if (t.bf16_max_steps > 0) t.max_steps = t.bf16_max_steps;
  return t;
}

std::string trained_length_note(const TrainingConfig& training, Precision trained) {
  if (trained != Precision::Bf16 || !has_bf16_length(training)) return "";
  const TrainingConfig t = trained_length(training, trained);
  return strprintf("length in bf16: %d epochs%s (bf16-epochs, bf16-max-steps)", t.epochs,
                   t.max_steps > 0 ? strprintf(", at most %ld optimiser steps", t.max_steps).c_str() : "");
}

std::vector<std::string> RunConfig::describe() const {
  std::vector<std::string> lines;
  RunConfig copy = *this;
  visit_options(copy, kNoNames, [&](Section, const char* name, const auto& field, Binding, const std::string&) {
    lines.push_back(strprintf("  %-24s = %s", name, text(field).c_str()));
  });
  return lines;
}

std::vector<std::pair<std::string, std::string>> RunConfig::run_definition() const {
  std::vector<std::pair<std::string, std::string>> keys;
  RunConfig copy = *this;
  visit_options(copy, kNoNames, [&](Section, const char* name, const auto& field, Binding binding, const std::string&) {
    if (binding == kDefinesRun) keys.emplace_back(name, text(field));
  });
  return keys;
}

}  // namespace cifar
