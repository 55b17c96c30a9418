// Checkpoint files and the trainer's checkpoint/resume hooks (see checkpoint.hpp).
#include "checkpoint/checkpoint.hpp"

#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include "comm/agreement.hpp"
#include "comm/text_collectives.hpp"
#include "data/distributed_sampler.hpp"
#include "checkpoint/archive_check.hpp"
#include "checkpoint/model_io.hpp"
#include "train/run_plan.hpp"
#include "train/preemption.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/memory.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

const char* const kFormatTag = "cifar_mpi checkpoint";
const std::regex kNamePattern(R"(ckpt-e(\d+)-s(\d+)\.pt)");

// Appended to every refusal of a checkpoint written by another run.
const char* const kNewRunHint =
    ", or start a new run: --resume none with another (empty) --checkpoint-dir";

// What to do about an unusable file, appended to every read error.
std::string fix_hint(const std::string& path) {
  return "; delete or move it away (" + path + ") to resume from an older checkpoint (--resume auto)" + kNewRunHint;
}

std::vector<char> read_bytes(const std::string& path) {
  // Before opening: a folder would fail deep in the stream library, a FIFO would block.
  // The whole file is read into memory: one larger than the machine's is no checkpoint of ours.
  const paths::FileCheck check = paths::check_regular_file(path, physical_memory_bytes());
  if (check.problem == paths::FileProblem::Missing)
    throw CheckpointError("cannot open checkpoint '" + path + "': no such file (check the path given to --resume)");
  if (!check)
    throw CheckpointError("checkpoint '" + path + "' " + check.reason +
                          " (--resume takes a checkpoint file, or auto for the newest in --checkpoint-dir)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError("cannot open checkpoint '" + path + "': " + std::strerror(errno) +
                                 " (check the path given to --resume)");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw CheckpointError("cannot read checkpoint '" + path + "': " + std::strerror(errno));
  return bytes;
}

// Typed access to the checkpoint's top-level dict; a missing or mistyped
// entry means the file is not a checkpoint this program wrote.
class Fields {
 public:
  Fields(c10::impl::GenericDict dict, std::string path) : dict_(std::move(dict)), path_(std::move(path)) {}
  const c10::IValue& get(const char* key, bool (c10::IValue::*is_type)() const, const char* type) const {
    const auto it = dict_.find(c10::IValue(std::string(key)));
    if (it == dict_.end() || !(it->value().*is_type)())
      throw CheckpointError("checkpoint '" + path_ + "' has no " + type + " '" + key +
                            "': not a complete cifar_mpi checkpoint" + fix_hint(path_));
    return it->value();
  }
  int64_t integer(const char* key) const { return get(key, &c10::IValue::isInt, "integer").toInt(); }
  double real(const char* key) const { return get(key, &c10::IValue::isDouble, "number").toDouble(); }
  std::string text(const char* key) const { return get(key, &c10::IValue::isString, "string").toStringRef(); }
  bool flag(const char* key) const { return get(key, &c10::IValue::isBool, "boolean").toBool(); }
  at::Tensor tensor(const char* key) const { return get(key, &c10::IValue::isTensor, "tensor").toTensor(); }
  bool has(const char* key) const { return dict_.contains(c10::IValue(std::string(key))); }

 private:
  c10::impl::GenericDict dict_;
  std::string path_;
};

at::Tensor bytes_tensor(const std::string& bytes) {
  at::Tensor t = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

// Whether every element of `t` lies inside its storage. LibTorch 1.13's
// unpickler takes a tensor's sizes, strides and storage offset from the file
// as they are: a damaged checkpoint decoded into tensors reaching past their
// storage, which restoring then copied from (found by the checkpoint fuzz
// harness, tests/fuzz/regression/checkpoint).
bool within_storage(const at::Tensor& t) {
  if (!t.defined()) return true;
  if (t.is_sparse() || !t.has_storage() || t.storage_offset() < 0) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) == 0) return true;  // no elements (before numel(), which could overflow)
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    int64_t step = 0;
    if (t.size(d) < 0 || t.stride(d) < 0 || __builtin_mul_overflow(t.size(d) - 1, t.stride(d), &step) ||
        __builtin_add_overflow(last, step, &last))
      return false;
  }
  uint64_t end = 0;
  return !__builtin_mul_overflow(static_cast<uint64_t>(last) + 1, static_cast<uint64_t>(t.element_size()), &end) &&
         end <= t.storage().nbytes();
}

// Refuses the decoded file when any tensor in it, at any depth, reaches past
// its storage; `where` names it ("model/fc.weight").
void check_tensor_bounds(const c10::IValue& v, const std::string& path, const std::string& where) {
  if (v.isTensor()) {
    if (!within_storage(v.toTensor()))
      throw CheckpointError("checkpoint '" + path + "': tensor '" + where +
                            "' reaches past its storage (truncated or corrupt?)" + fix_hint(path));
  } else if (v.isGenericDict()) {
    for (const auto& e : v.toGenericDict())
      check_tensor_bounds(e.value(), path, where + (where.empty() ? "" : "/") + (e.key().isString() ? e.key().toStringRef() : "?"));
  } else if (v.isList()) {
    size_t i = 0;
    for (const auto& e : v.toListRef()) check_tensor_bounds(e, path, where + "[" + std::to_string(i++) + "]");
  }
}

std::string tensor_bytes(const at::Tensor& t) {
  const at::Tensor c = t.to(torch::kCPU).contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()));
}

at::Tensor generator_state(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_generator_state(at::Generator generator, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

// Runs `parse` and turns what LibTorch's parsers throw -- c10::Error (whose
// what() carries a backtrace), torch::jit::ErrorReport, std::runtime_error,
// an ArchiveError naming the entry -- into one CheckpointError:
// "checkpoint 'PATH'<problem>: <their message>".
template <typename Parse>
auto rethrow_unreadable(const std::string& path, const std::string& problem, Parse&& parse) {
  const std::string prefix = "checkpoint '" + path + "'" + problem + ": ";
  try {
    return parse();
  } catch (const c10::Error& e) {
    throw CheckpointError(prefix + e.what_without_backtrace() + fix_hint(path));
  } catch (const std::exception& e) {
    throw CheckpointError(prefix + e.what() + fix_hint(path));
  }
}

// A damaged CPU generator state made LibTorch's set_state throw c10::Error
// ("Invalid mt19937 state") out of restore_checkpoint, after the model and the
// optimiser were restored (found by the checkpoint fuzz harness). It is tried
// on a scratch generator when the file is read, so that --resume auto passes
// over such a file as over any unreadable one.
at::Tensor checked_cpu_rng_state(const at::Tensor& state, const std::string& path) {
  rethrow_unreadable(path, ": its CPU random-number state is not valid (corrupt?)",
                     [&] { set_generator_state(at::make_generator<at::CPUGeneratorImpl>(), state); });
  return state;
}

std::string mismatch(const std::string& path, const char* what, const std::string& saved, const std::string& now,
                     const std::string& fix) {
  return "checkpoint '" + path + "' was written with " + what + " " + saved + ", but this run has " + now +
         ": it cannot continue that run exactly; " + fix + kNewRunHint;
}

// TrainConfig::describe() lines ("  key = value") as a map.
std::map<std::string, std::string> config_values(const std::vector<std::string>& lines) {
  std::map<std::string, std::string> values;
  for (const auto& line : lines) {
    const auto eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    const auto begin = line.find_first_not_of(' ');
    const auto end = line.find_last_not_of(' ', eq);
    if (begin < eq) values[line.substr(begin, end - begin + 1)] = line.substr(eq + 3);
  }
  return values;
}

struct Difference {
  std::string key, saved, now;
};

// The run-defining options whose values differ; a key the checkpoint does not
// record (written before the option existed) counts as the option's default.
std::vector<Difference> run_differences(const Checkpoint& c, const RunIdentity& run) {
  const auto saved = config_values(c.config);
  std::map<std::string, std::string> defaults;
  for (const auto& [key, value] : TrainConfig{}.run_definition()) defaults[key] = value;
  std::vector<Difference> differences;
  for (const auto& [key, now] : run.defining) {
    const auto it = saved.find(key);
    const std::string before = it != saved.end() ? it->second : defaults[key];
    if (before != now) differences.push_back({key, before, now});
  }
  return differences;
}

}  // namespace

std::string checkpoint_file_name(const TrainingPosition& position) {
  return strprintf("ckpt-e%04d-s%06ld.pt", position.epoch, position.step);
}

bool is_checkpoint_file_name(const std::string& name) { return std::regex_match(name, kNamePattern); }

std::vector<std::string> list_checkpoints(const std::string& folder) {
  struct Entry {
    long step;
    long epoch;
    std::string path;
  };
  std::vector<Entry> entries;
  if (!paths::is_directory(folder)) return {};
  for (const std::string& name : paths::list(folder)) {
    std::smatch m;
    const std::string path = paths::join(folder, name);
    if (std::regex_match(name, m, kNamePattern) && paths::is_regular_file(path))
      entries.push_back({std::stol(m[2]), std::stol(m[1]), path});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.step, a.epoch, a.path) > std::tie(b.step, b.epoch, b.path);
  });
  std::vector<std::string> paths;
  for (auto& e : entries) paths.push_back(std::move(e.path));
  return paths;
}

void prune_checkpoints(const std::string& folder, int keep) {
  const auto paths = list_checkpoints(folder);
  for (size_t i = static_cast<size_t>(std::max(keep, 0)); i < paths.size(); ++i) {
    if (std::remove(paths[i].c_str()) != 0)
      log::warn("cannot delete old checkpoint " + paths[i] + ": " + std::strerror(errno));
  }
}

std::vector<char> encode_checkpoint(const Checkpoint& c) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert(std::string("format"), std::string(kFormatTag));
  d.insert(std::string("format_version"), kCheckpointFormatVersion);
  d.insert(std::string("model_name"), c.model_name);
  d.insert(std::string("optimizer_name"), c.optimizer_name);
  d.insert(std::string("world_size"), static_cast<int64_t>(c.world_size));
  d.insert(std::string("batch_size"), static_cast<int64_t>(c.batch_size));
  d.insert(std::string("accumulate"), static_cast<int64_t>(c.accumulate));
  d.insert(std::string("train_size"), c.train_size);
  d.insert(std::string("data_identity"), c.data_identity);
  d.insert(std::string("epoch"), static_cast<int64_t>(c.position.epoch));
  d.insert(std::string("batch_in_epoch"), static_cast<int64_t>(c.position.batch_in_epoch));
  d.insert(std::string("step"), static_cast<int64_t>(c.position.step));
  d.insert(std::string("order_world_size"), static_cast<int64_t>(c.position.order_world_size));
  d.insert(std::string("order_batch_size"), static_cast<int64_t>(c.position.order_batch_size));
  d.insert(std::string("batch_origin"), c.position.batch_origin);
  d.insert(std::string("global_position"), c.global_position);
  d.insert(std::string("lr_global_batch"), c.lr_global_batch);
  d.insert(std::string("reshaped"), c.reshaped);
  d.insert(std::string("epoch_loss_sum"), c.epoch_loss_sum);
  d.insert(std::string("epoch_loss_count"), c.epoch_loss_count);
  c10::List<std::string> config;
  for (const auto& line : c.config) config.push_back(line);
  d.insert(std::string("config"), config);
  d.insert(std::string("model"), c.model_state);
  d.insert(std::string("optimizer"), bytes_tensor(c.optimizer_state));
  d.insert(std::string("cpu_rng_state"), c.cpu_rng_state);
  if (c.device_rng_state.defined()) d.insert(std::string("device_rng_state"), c.device_rng_state);
  d.insert(std::string("loss_scale"), c.loss_scale);
  d.insert(std::string("loss_scale_clean_steps"), static_cast<int64_t>(c.loss_scale_clean_steps));
  if (!c.lookahead_average.empty()) d.insert(std::string("lookahead"), c10::List<at::Tensor>(c.lookahead_average));
  d.insert(std::string("skipped_steps"), static_cast<int64_t>(c.skipped_steps));
  return torch::pickle_save(c10::IValue(d));
}

namespace {
// The step shape is read as int64 and used in products: each part must fit an
// int and the global batch per step too (then every product below fits int64).
void check_step_shape(const Checkpoint& c, const std::string& path) {
  const int64_t limit = std::numeric_limits<int>::max();
  const int64_t micro = static_cast<int64_t>(c.batch_size) * c.world_size;
  const bool each = c.batch_size >= 1 && c.world_size >= 1 && c.accumulate >= 1;
  if (!each || micro > limit || micro * c.accumulate > limit)
    throw CheckpointError(strprintf("checkpoint '%s' holds a step of %d per rank x %d ranks x %d micro-batches: not a "
                                    "shape any run has (a damaged file)",
                                    path.c_str(), c.batch_size, c.world_size, c.accumulate) + fix_hint(path));
}

int as_int(int64_t v) {
  return v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max() ? -1 : static_cast<int>(v);
}

// Where the checkpoint is in its epoch's global order, and what --lr is for.
// Version 1 files predate elastic resume: their epoch followed their own
// world size, and the global position is the per-rank one times the world.
// Version 2 files record the order's world size and the global position;
// their global micro-batch never changed, so the order's per-rank batch
// follows. Version 3 files record it all. A global position that is not the
// origin plus the batches times the global micro-batch is a damaged file.
void read_epoch_order(const Fields& f, int64_t version, const std::string& path, Checkpoint& c) {
  TrainingPosition& p = c.position;
  const int64_t micro = static_cast<int64_t>(c.batch_size) * c.world_size;
  p.order_world_size = c.world_size;
  p.order_batch_size = c.batch_size;
  c.lr_global_batch = micro * c.accumulate;
  if (version >= 2) {
    p.order_world_size = as_int(f.integer("order_world_size"));
    p.order_batch_size = p.order_world_size >= 1 && micro % p.order_world_size == 0
                             ? static_cast<int>(micro / p.order_world_size) : -1;
  }
  if (version >= 3) {
    p.order_batch_size = as_int(f.integer("order_batch_size"));
    p.batch_origin = f.integer("batch_origin");
    c.lr_global_batch = f.integer("lr_global_batch");
    c.reshaped = f.flag("reshaped");
  }
  // Numbers from the file: no product may overflow, and no run has more ranks than samples.
  int64_t derived = -1;
  const bool counted = p.batch_in_epoch >= 0 && p.batch_origin >= 0 &&
                       !__builtin_mul_overflow(static_cast<int64_t>(p.batch_in_epoch), micro, &derived) &&
                       !__builtin_add_overflow(derived, p.batch_origin, &derived);
  c.global_position = version >= 2 ? f.integer("global_position") : derived;
  if (!counted || p.order_world_size < 1 || p.order_world_size > c.train_size || p.order_batch_size < 1 ||
      c.global_position != derived || c.lr_global_batch < 1)
    throw CheckpointError(strprintf("checkpoint '%s' holds global position %lld, origin %lld, order %d ranks x %d "
                                    "and --lr's global batch %lld, but %ld batch(es) of %d on %d ranks from that "
                                    "origin make position %lld: a damaged file",
                                    path.c_str(), static_cast<long long>(c.global_position),
                                    static_cast<long long>(p.batch_origin), p.order_world_size, p.order_batch_size,
                                    static_cast<long long>(c.lr_global_batch), p.batch_in_epoch, c.batch_size,
                                    c.world_size, static_cast<long long>(derived)) + fix_hint(path));
}

// The file's top-level dict, every tensor in it checked against its storage.
c10::impl::GenericDict read_top_level_dict(const std::string& path) {
  const std::vector<char> bytes = read_bytes(path);
  const c10::IValue value =
      rethrow_unreadable(path, " is not readable (truncated or corrupt?)", [&] { return unpickle_zip(bytes); });
  if (!value.isGenericDict())
    throw CheckpointError("checkpoint '" + path + "' holds a " + value.tagKind() +
                          ", not a cifar_mpi checkpoint" + fix_hint(path));
  check_tensor_bounds(value, path, "");
  return value.toGenericDict();
}

// The format tag and a version this program reads; returns the version.
int64_t checked_format_version(const Fields& f, const std::string& path) {
  if (!f.has("format") || f.text("format") != kFormatTag)
    throw CheckpointError("'" + path + "' is not a cifar_mpi checkpoint (a model file? those are loaded with "
                          "load_state_dict, not --resume)" + fix_hint(path));
  const int64_t version = f.integer("format_version");
  if (version < 1 || version > kCheckpointFormatVersion)
    throw CheckpointError(strprintf("checkpoint '%s' has format version %lld; this program reads versions 1 to %lld "
                                    "(a newer cifar_mpi wrote it? resume it with that version)",
                                    path.c_str(), static_cast<long long>(version),
                                    static_cast<long long>(kCheckpointFormatVersion)) + fix_hint(path));
  return version;
}

// The optimiser state is a TorchScript archive of its own, which restoring
// hands to LibTorch's zip reader, unpickler and script compiler: its sizes and
// its source files are checked here, so that --resume auto passes over such a
// file as over any unreadable one.
std::string checked_optimizer_state(const Fields& f, const std::string& path) {
  std::string state = tensor_bytes(f.tensor("optimizer"));
  rethrow_unreadable(path, ": its optimiser state is not readable (corrupt?)", [&] {
    check_torch_archive(state.data(), state.size());
    check_module_sources(state.data(), state.size());
  });
  return state;
}
}  // namespace

Checkpoint read_checkpoint(const std::string& path) {
  const Fields f(read_top_level_dict(path), path);
  const int64_t version = checked_format_version(f, path);
  Checkpoint c;
  c.model_name = f.text("model_name");
  c.optimizer_name = f.text("optimizer_name");
  c.world_size = as_int(f.integer("world_size"));
  c.batch_size = as_int(f.integer("batch_size"));
  c.accumulate = as_int(f.integer("accumulate"));
  check_step_shape(c, path);
  c.train_size = f.integer("train_size");
  if (f.has("data_identity")) c.data_identity = f.text("data_identity");  // optional: added within version 1
  c.position = {static_cast<int>(f.integer("epoch")), static_cast<long>(f.integer("batch_in_epoch")),
                static_cast<long>(f.integer("step"))};
  read_epoch_order(f, version, path, c);
  c.epoch_loss_sum = f.real("epoch_loss_sum");
  c.epoch_loss_count = f.real("epoch_loss_count");
  for (const auto& line : f.get("config", &c10::IValue::isList, "list").toListRef())
    if (line.isString()) c.config.push_back(line.toStringRef());
  c.model_state = f.get("model", &c10::IValue::isGenericDict, "dict");
  c.optimizer_state = checked_optimizer_state(f, path);
  c.cpu_rng_state = checked_cpu_rng_state(f.tensor("cpu_rng_state"), path);
  if (f.has("device_rng_state")) c.device_rng_state = f.tensor("device_rng_state");
  c.loss_scale = f.real("loss_scale");
  c.loss_scale_clean_steps = static_cast<int>(f.integer("loss_scale_clean_steps"));
  if (f.has("lookahead"))
    for (const auto& t : f.get("lookahead", &c10::IValue::isTensorList, "tensor list").toTensorVector())
      c.lookahead_average.push_back(t);
  if (f.has("skipped_steps")) c.skipped_steps = static_cast<long>(f.integer("skipped_steps"));
  return c;
}

RunIdentity run_identity(const TrainConfig& config, int world_size, int64_t train_size,
                         const std::string& data_identity) {
  RunIdentity r;
  r.model = config.model.name;
  r.optimizer = config.optim.optimizer;
  r.world_size = world_size;
  r.batch_size = per_rank_batch_size(config.training, world_size);
  r.accumulate = config.training.accumulate;
  r.elastic_batch = config.checkpoint.elastic_batch;
  r.lr_global_batch = StepShape{r.batch_size, world_size, r.accumulate}.global_batch();
  r.train_size = train_size;
  r.data_identity = data_identity;
  r.data_path = config.data.path;
  r.config = config.describe();
  r.defining = config.run_definition();
  return r;
}

Checkpoint capture_checkpoint(const RunIdentity& run, const TrainingPosition& position, double epoch_loss_sum,
                              double epoch_loss_count, const TrainState& state) {
  Checkpoint c;
  c.model_name = run.model;
  c.optimizer_name = run.optimizer;
  c.world_size = run.world_size;
  c.batch_size = run.batch_size;
  c.accumulate = run.accumulate;
  c.train_size = run.train_size;
  c.data_identity = run.data_identity;
  c.position = position;
  if (c.position.order_world_size == 0) c.position = {position.epoch, position.batch_in_epoch, position.step,
                                                      run.world_size, run.batch_size, 0};
  c.global_position = c.position.batch_origin + static_cast<int64_t>(position.batch_in_epoch) * run.batch_size *
                                                    run.world_size;
  c.lr_global_batch = run.lr_global_batch;
  c.reshaped = run.reshaped;
  c.epoch_loss_sum = epoch_loss_sum;
  c.epoch_loss_count = epoch_loss_count;
  c.config = run.config;
  c.model_state = c10::IValue(cpu_state_dict(state.model));
  torch::serialize::OutputArchive archive;
  state.optimizer.save(archive);
  std::ostringstream os;
  archive.save_to(os);
  c.optimizer_state = os.str();
  c.cpu_rng_state = generator_state(at::detail::getDefaultCPUGenerator());
  if (!state.device.is_cpu()) c.device_rng_state = generator_state(at::globalContext().defaultGenerator(state.device));
  c.loss_scale = state.scaler.current_scale();
  c.loss_scale_clean_steps = state.scaler.clean_steps();
  if (state.lookahead && state.lookahead->enabled())
    for (const auto& t : state.lookahead->average()) c.lookahead_average.push_back(t.to(torch::kCPU, false, true));
  c.skipped_steps = state.skipped_steps ? *state.skipped_steps : 0;
  return c;
}

namespace {
bool is_batch_option(const Difference& d) {
  return d.key == "batch-size" || d.key == "global-batch-size" || d.key == "accumulate";
}
StepShape written_shape(const Checkpoint& c) { return {c.batch_size, c.world_size, c.accumulate}; }
}  // namespace

StepShape resumed_step_shape(const Checkpoint& c, const std::string& path, const RunIdentity& run) {
  const StepShape written = written_shape(c);
  const StepShape asked{run.batch_size, run.world_size, run.accumulate};
  if (run.elastic_batch == ElasticBatch::PerRank || asked.global_batch() == written.global_batch()) return asked;
  // The batch options as the checkpoint's run had them: the same command line
  // on another allocation (perhaps after earlier elastic resumes).
  const auto differences = run_differences(c, run);
  if (std::none_of(differences.begin(), differences.end(), is_batch_option)) {
    try {
      return elastic_step_shape(written, run.world_size);
    } catch (const ConfigError& e) {
      throw CheckpointError("checkpoint '" + path + "': " + e.what() + kNewRunHint);
    }
  }
  // The same world size with another global batch: check_resumable lists it
  // with the run's other differing options.
  if (c.world_size == run.world_size) return asked;
  std::string fix;
  try {
    const StepShape kept = elastic_step_shape(written, run.world_size);
    fix = strprintf("pass --batch-size %d --accumulate %d (or --global-batch-size %lld --accumulate %d)",
                    kept.batch_size, kept.accumulate, static_cast<long long>(kept.micro_batch()), kept.accumulate);
  } catch (const ConfigError& e) {
    fix = e.what();
  }
  const auto saved = config_values(c.config);
  auto as_written = [&](const char* key) {
    const auto it = saved.find(key);
    return it == saved.end() ? std::string("?") : it->second;
  };
  throw CheckpointError(strprintf(
      "checkpoint '%s' was written with a global batch of %lld per optimiser step (%s); this run asks for %s = %lld, "
      "and a resumed run keeps the global batch (--elastic-batch global): %s; or give the batch options as that run "
      "had them (--batch-size %s --accumulate %s)",
      path.c_str(), static_cast<long long>(written.global_batch()), to_string(written).c_str(),
      to_string(asked).c_str(), static_cast<long long>(asked.global_batch()), fix.c_str(),
      as_written("batch-size").c_str(), as_written("accumulate").c_str()) + kNewRunHint);
}

RunIdentity continued_run(const Checkpoint& c, const std::string& path, RunIdentity run) {
  const StepShape shape = resumed_step_shape(c, path, run);
  run.reshaped = c.reshaped || shape.micro_batch() != written_shape(c).micro_batch() || shape.accumulate != c.accumulate;
  run.batch_size = shape.batch_size;
  run.accumulate = shape.accumulate;
  run.lr_global_batch = c.lr_global_batch;
  return run;
}

void check_resumable(const Checkpoint& c, const std::string& path, const RunIdentity& run) {
  auto n = [](long long v) { return std::to_string(v); };
  // Refuses a world size that cannot keep the global batch.
  const StepShape shape = resumed_step_shape(c, path, run);
  auto differences = run_differences(c, run);
  // The global batch is kept: the per-rank batch and the accumulation follow
  // from it, whatever the batch options say. (per-rank: they must be the
  // writing run's, as every other run-defining option.)
  if (run.elastic_batch == ElasticBatch::Global && shape.global_batch() == written_shape(c).global_batch())
    differences.erase(std::remove_if(differences.begin(), differences.end(), is_batch_option), differences.end());
  if (!differences.empty()) {
    std::string listed, fix;
    for (const auto& d : differences) {
      listed += (listed.empty() ? "" : "; ") + ("--" + d.key + " " + d.saved + " there, " + d.now + " here");
      fix += (fix.empty() ? "" : " ") + ("--" + d.key + " " + d.saved);
    }
    throw CheckpointError("checkpoint '" + path + "' was written by a different run: " + listed +
                          ". It cannot continue that run; pass the checkpoint's values (" + fix + ")" + kNewRunHint);
  }
  if (!c.data_identity.empty() && c.data_identity != run.data_identity)
    throw CheckpointError(mismatch(path, "training data of", c.data_identity,
                                   run.data_identity + " (--data " + run.data_path + ")", "pass the same --data"));
  if (c.train_size != run.train_size)
    throw CheckpointError(mismatch(path, "a training split of", n(c.train_size) + " samples",
                                   n(run.train_size) + " samples in " + run.data_path, "pass the same --data"));
}

std::string position_problem(const TrainingPosition& p, const RunPlan& plan, bool check_step) {
  // batch == batches_per_epoch is an epoch's last step done but its end not
  // yet reached: a checkpoint written at that step boundary (preemption,
  // --checkpoint-every-steps) holds it, and the resumed run ends the epoch.
  if (p.epoch < 0 || p.batch_in_epoch < 0 || p.batch_in_epoch > plan.batches_per_epoch || p.step < 0)
    return strprintf("holds the position epoch %d, batch %ld, step %ld, outside a run of %ld batches per epoch",
                     p.epoch, p.batch_in_epoch, p.step, plan.batches_per_epoch);
  const bool epoch_done = p.batch_in_epoch == plan.batches_per_epoch;
  if (!epoch_done && p.batch_in_epoch % plan.accumulate != 0)
    return strprintf("holds batch %ld, not the end of an optimiser step of %d batches", p.batch_in_epoch,
                     plan.accumulate);
  const long steps_in_epoch = epoch_done ? plan.steps_per_epoch : p.batch_in_epoch / plan.accumulate;
  const long expected = static_cast<long>(p.epoch) * plan.steps_per_epoch + steps_in_epoch;
  if (check_step && p.step != expected)
    return strprintf("holds step %ld, but epoch %d, batch %ld is step %ld of this run", p.step, p.epoch,
                     p.batch_in_epoch, expected);
  return "";
}

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

TrainingPosition continued_position(const Checkpoint& c, const std::string& path, const RunPlan& plan,
                                    int world_size, bool drop_last) {
  const TrainingPosition& p = c.position;
  const int64_t end = epoch_end(c.train_size, p.order_world_size, p.order_batch_size, drop_last);
  // The position as its writer reached it: a step boundary of its epoch (in
  // its micro-batches, from its origin), and for a run of one shape
  // throughout that is this run's too, the step count of its epoch and batch.
  const StepShape written = written_shape(c);
  RunPlan writers = plan;
  writers.batch_size = c.batch_size;
  writers.accumulate = c.accumulate;
  writers.batches_per_epoch = static_cast<long>(ceil_div(std::max<int64_t>(end - p.batch_origin, 0), written.micro_batch()));
  writers.steps_per_epoch = static_cast<long>(ceil_div(writers.batches_per_epoch, c.accumulate));
  const bool writers_own_epoch =
      p.order_world_size == c.world_size && p.order_batch_size == c.batch_size && p.batch_origin == 0;
  const StepShape shape{plan.batch_size, world_size, plan.accumulate};
  const bool one_shape = !c.reshaped && writers_own_epoch && shape == written;
  if (const std::string why = position_problem(p, writers, one_shape); !why.empty())
    throw CheckpointError("checkpoint '" + path + "' " + why + " (a damaged file?); resume from another checkpoint");

  const int64_t position = c.global_position;
  TrainingPosition q{p.epoch, 0, p.step};
  // The epoch's last step done, its end not yet reached: the run ends it.
  if (position >= end) {
    q.batch_in_epoch = plan.batches_per_epoch;
    return q;
  }
  const bool own_order = p.order_world_size == world_size && p.order_batch_size == plan.batch_size;
  if (position == 0 || (own_order && position % shape.global_batch() == 0)) {
    q.batch_in_epoch = static_cast<long>(position / shape.micro_batch());
    return q;
  }
  q.order_world_size = p.order_world_size;
  q.order_batch_size = p.order_batch_size;
  q.batch_origin = position % shape.global_batch();
  q.batch_in_epoch = static_cast<long>((position - q.batch_origin) / shape.micro_batch());
  // Full micro-batches divide among the ranks; the rest's last one may be short.
  const int64_t last = (end - position) % shape.micro_batch();
  if (last % world_size != 0)
    throw CheckpointError(strprintf("checkpoint '%s': the rest of epoch %d (positions [%lld, %lld) of its order) ends "
                                    "with a micro-batch of %lld samples, which do not divide among %d ranks; resume "
                                    "on a world size that divides it",
                                    path.c_str(), p.epoch, static_cast<long long>(position), static_cast<long long>(end),
                                    static_cast<long long>(last), world_size) + kNewRunHint);
  return q;
}

double lr_scale(const RunIdentity& run) {
  const StepShape shape{run.batch_size, run.world_size, run.accumulate};
  return static_cast<double>(shape.global_batch()) / static_cast<double>(run.lr_global_batch);
}

std::string elastic_resume_note(const Checkpoint& c, const RunIdentity& run, double lr) {
  const StepShape written = written_shape(c), shape{run.batch_size, run.world_size, run.accumulate};
  if (shape == written) return "";
  auto on = [](const StepShape& s) {
    return strprintf("%d rank(s) with %d per rank", s.world_size, s.batch_size) +
           (s.accumulate == 1 ? "" : strprintf(" x %d micro-batches", s.accumulate));
  };
  std::string note = "elastic resume: written on " + on(written) + ", continued on " + on(shape);
  if (shape.accumulate != written.accumulate) note += " (gradient accumulation)";
  const auto global = [](const StepShape& s) { return static_cast<long long>(s.global_batch()); };
  if (shape.global_batch() == written.global_batch())
    note += strprintf(": the same global batch of %lld per optimiser step", global(shape));
  else
    note += strprintf(": the global batch per optimiser step changes from %lld to %lld", global(written),
                      global(shape));
  note += strprintf(" (--elastic-batch %s)", to_string(run.elastic_batch));
  if (lr_scale(run) != 1.0)
    note += strprintf("; the learning rate follows it (linear scaling): --lr %g x %lld/%lld = %g", lr, global(shape),
                      static_cast<long long>(run.lr_global_batch), lr * lr_scale(run));
  if (c.position.batch_in_epoch > 0)
    note += strprintf("; the rest of epoch %d (from its global position %lld) is re-sharded among the %d ranks",
                      c.position.epoch, static_cast<long long>(c.global_position), run.world_size);
  return note;
}

std::string length_change_note(const Checkpoint& c, const RunIdentity& run) {
  const auto saved = config_values(c.config), now = config_values(run.config);
  auto value = [](const std::map<std::string, std::string>& m, const char* key) {
    const auto it = m.find(key);
    return it == m.end() ? std::string("?") : it->second;
  };
  const std::string schedule = value(saved, "schedule");
  const bool depends_on_length = schedule == to_string(ScheduleKind::Cosine) ||
                                 schedule == to_string(ScheduleKind::OneCycle);
  const std::string before = "--epochs " + value(saved, "epochs") + " --max-steps " + value(saved, "max-steps");
  const std::string after = "--epochs " + value(now, "epochs") + " --max-steps " + value(now, "max-steps");
  if (!depends_on_length || before == after) return "";
  return "the run's length changes from " + before + " to " + after + " and the " + schedule +
         " schedule depends on it: from the resumed step on, the learning rate follows the new length, so the "
         "result differs from both uninterrupted runs";
}

void restore_checkpoint(const Checkpoint& c, const std::string& path, TrainState& state) {
  apply_state_dict(state.model, c.model_state.toGenericDict(), path);
  try {
    torch::serialize::InputArchive archive;
    std::istringstream is(c.optimizer_state);
    archive.load_from(is, state.device);
    state.optimizer.load(archive);
  } catch (const c10::Error& e) {
    throw CheckpointError("checkpoint '" + path + "': its optimiser state does not fit this model and optimiser: " +
                          e.what_without_backtrace() + fix_hint(path));
  } catch (const std::exception& e) {
    // The optimiser state is a TorchScript archive of its own: a damaged one
    // made LibTorch's script parser throw torch::jit::ErrorReport or
    // std::runtime_error, which escaped as an uncaught exception (found by the
    // checkpoint fuzz harness, tests/fuzz/regression/checkpoint).
    throw CheckpointError("checkpoint '" + path + "': its optimiser state is not readable (corrupt?): " + e.what() +
                          fix_hint(path));
  }
  state.scaler.restore(c.loss_scale, c.loss_scale_clean_steps);
  if (state.lookahead && state.lookahead->enabled()) {
    if (c.lookahead_average.empty())
      throw CheckpointError("checkpoint '" + path + "' has no lookahead average, but this run uses --lookahead-every" +
                            fix_hint(path));
    state.lookahead->restore(c.lookahead_average);
  }
  set_generator_state(at::detail::getDefaultCPUGenerator(), c.cpu_rng_state);  // checked by read_checkpoint
  if (!state.device.is_cpu() && c.device_rng_state.defined()) {
    // A device generator cannot be tried without the device: checked as it is set.
    rethrow_unreadable(path, ": its " + state.device.str() + " random-number state is not valid (corrupt?)", [&] {
      set_generator_state(at::globalContext().defaultGenerator(state.device), c.device_rng_state);
    });
  }
}

Checkpointer::Checkpointer(const CheckpointConfig& config, RunIdentity run, TrainState state, Communicator& control,
                           std::function<void()> before_write)
    : config_(config), run_(std::move(run)), state_(state), control_(control), before_write_(std::move(before_write)) {}

namespace {

// The first of `paths` (newest first) that reads as a checkpoint, or "" when
// none does; each unreadable one is warned about and added to `reasons`.
std::string newest_readable(const std::vector<std::string>& paths, std::string* reasons) {
  for (const auto& path : paths) {
    try {
      read_checkpoint(path);
      return path;
    } catch (const CheckpointError& e) {
      log::warn(std::string("skipping ") + e.what());
      *reasons += std::string("\n  ") + e.what();
    }
  }
  return "";
}

}  // namespace

// Rank 0's choice: --resume PATH as given; --resume auto the newest file in
// --checkpoint-dir that reads as a checkpoint (unreadable ones are skipped
// with a warning, all unreadable is an error); "" for a fresh start.
std::string Checkpointer::choose_resume_path() const {
  using Kind = ResumeRequest::Kind;
  if (config_.resume.kind == Kind::None) return "";
  if (config_.resume.kind == Kind::Path) return config_.resume.path;
  const auto paths = list_checkpoints(config_.dir);
  if (paths.empty()) {
    log::info("--resume auto: no checkpoint in " + config_.dir + "; starting afresh");
    return "";
  }
  std::string reasons;
  const std::string path = newest_readable(paths, &reasons);
  if (path.empty())
    throw CheckpointError("--resume auto: none of the " + std::to_string(paths.size()) + " checkpoint(s) in " +
                          config_.dir + " is readable:" + reasons);
  return path;
}

// A --checkpoint-dir holds the checkpoints of one run, so that pruning (the
// newest --keep-checkpoints stay) never deletes another run's files and
// --resume auto never picks up another run. A run that does not continue the
// folder's run is refused before it trains.
void Checkpointer::check_folder_belongs_to_this_run(const std::string& resume_path) const {
  if (!config_.enabled() || config_.resume.kind == ResumeRequest::Kind::Auto) return;  // auto: checked on resume
  const auto existing = list_checkpoints(config_.dir);
  if (existing.empty()) return;
  if (resume_path.empty())
    throw ConfigError(strprintf("--checkpoint-dir %s already holds %zu checkpoint(s) of an earlier run (newest %s); "
                                "continue that run with --resume auto, or start this one in another (empty) "
                                "--checkpoint-dir: a run never writes or prunes beside another run's checkpoints",
                                config_.dir.c_str(), existing.size(), paths::file_name(existing.front()).c_str()));
  std::string reasons;
  const std::string newest = newest_readable(existing, &reasons);
  if (!newest.empty()) check_resumable(read_checkpoint(newest), newest, run_);
}

std::optional<Checkpoint> Checkpointer::resume() {
  std::string path;
  agree_on(control_, [&] {
    if (control_.rank() != 0) return;
    path = choose_resume_path();
    check_folder_belongs_to_this_run(path);
  });
  path = broadcast_string(control_, path);
  if (path.empty()) return std::nullopt;
  std::optional<Checkpoint> checkpoint;
  agree_on(control_, [&] {
    checkpoint = read_checkpoint(path);
    check_resumable(*checkpoint, path, run_);
    restore_checkpoint(*checkpoint, path, state_);
  });
  // Every rank: the same checkpoint and world, the same verdict (checked above).
  run_ = continued_run(*checkpoint, path, run_);
  if (control_.rank() == 0) {
    const auto& p = checkpoint->position;
    log::info(strprintf("resumed from checkpoint %s: epoch %d, %ld batch(es) of it done, step %ld", path.c_str(),
                        p.epoch, p.batch_in_epoch, p.step));
    const std::string note = length_change_note(*checkpoint, run_);
    if (!note.empty()) log::warn(note);
  }
  resumed_path_ = path;
  last_written_ = path;
  return checkpoint;
}

void Checkpointer::save(const TrainingPosition& position, double loss_sum, double loss_count) {
  const std::string path = paths::join(config_.dir, checkpoint_file_name(position));
  if (path == last_written_) return;  // this exact state is on disk already
  if (before_write_) before_write_();
  agree_on(control_, [&] {
    if (control_.rank() != 0) return;  // every rank holds the same state; the others wait here
    // A folder that cannot be made is reported by the write below, with the file's name.
    paths::create_directories(config_.dir);
    write_file_atomically(path, encode_checkpoint(capture_checkpoint(run_, position, loss_sum, loss_count, state_)));
    prune_checkpoints(config_.dir, config_.keep);
    log::info(strprintf("checkpoint %s (epoch %d, batch %ld, step %ld)", path.c_str(), position.epoch,
                        position.batch_in_epoch, position.step));
  });
  last_written_ = path;
}

int Checkpointer::at_step_boundary(const TrainingPosition& position, const torch::Tensor& epoch_loss) {
  if (!config_.enabled()) return 0;
  const int signal = preemption_agreed(control_);
  const bool due = config_.every_steps > 0 && position.step % config_.every_steps == 0;
  if (signal == 0 && !due) return 0;
  auto loss = epoch_loss.to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
  control_.all_reduce(loss, ReduceOp::Sum);
  save(position, loss[0].item<double>(), loss[1].item<double>());
  if (signal != 0 && control_.rank() == 0)
    log::info(strprintf("preempted by %s: stopping at step %ld with checkpoint %s; exit code %d (resume with "
                        "--resume auto)",
                        signal_name(signal), position.step, last_written_.c_str(), kExitPreempted));
  return signal;
}

void Checkpointer::at_epoch_end(const TrainingPosition& position, const torch::Tensor& epoch_loss, bool last) {
  if (!config_.enabled()) return;
  const bool due = config_.every_epochs > 0 && position.epoch % config_.every_epochs == 0 &&
                   position.batch_in_epoch == 0;
  if (!due && !last) return;
  // At an epoch boundary the next epoch's loss sums start from zero.
  const auto loss = position.batch_in_epoch == 0 ? torch::zeros({2}, torch::kFloat64) : epoch_loss.cpu();
  save(position, loss[0].item<double>(), loss[1].item<double>());
}

}  // namespace cifar
