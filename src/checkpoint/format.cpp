// The checkpoint file format (see format.hpp): the key table, the encoder and
// the validating reader.
#include "checkpoint/format.hpp"

#include <torch/csrc/jit/serialization/pickle.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "checkpoint/messages.hpp"
#include "integrity/torch_archive.hpp"
#include "optim/lookahead.hpp"
#include "optim/optimizer_state.hpp"
#include "process/rng_state.hpp"
#include "step/precision.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/memory.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

const char* const kFormatTag = "cifar_mpi checkpoint";

// ---- The key table ----------------------------------------------------------

enum class Kind { Integer, Real, Text, Flag, Tensor, TensorList, TextList, Dict };

struct KindCheck {
  bool (c10::IValue::*is)() const;
  const char* name;  // in "has no <name> 'key'"
};
KindCheck kind_check(Kind kind) {
  switch (kind) {
    case Kind::Integer: return {&c10::IValue::isInt, "integer"};
    case Kind::Real: return {&c10::IValue::isDouble, "number"};
    case Kind::Text: return {&c10::IValue::isString, "string"};
    case Kind::Flag: return {&c10::IValue::isBool, "boolean"};
    case Kind::Tensor: return {&c10::IValue::isTensor, "tensor"};
    case Kind::TensorList: return {&c10::IValue::isTensorList, "tensor list"};
    case Kind::TextList: return {&c10::IValue::isList, "list"};
    case Kind::Dict: return {&c10::IValue::isGenericDict, "dict"};
  }
  throw std::logic_error("unknown checkpoint key kind");
}

int as_int(int64_t v) {
  return v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max() ? -1 : static_cast<int>(v);
}

// A Checkpoint member's value in the file, and back (the file's integers are
// int64; an int member out of range reads as -1, which the checks refuse).
c10::IValue to_value(int v) { return static_cast<int64_t>(v); }
c10::IValue to_value(int64_t v) { return v; }
c10::IValue to_value(double v) { return v; }
c10::IValue to_value(bool v) { return v; }
c10::IValue to_value(const std::string& v) { return v; }
c10::IValue to_value(const c10::IValue& v) { return v; }
c10::IValue to_value(const std::vector<std::string>& lines) {
  c10::List<std::string> list;
  for (const auto& line : lines) list.push_back(line);
  return list;
}
void from_value(const c10::IValue& v, int& out) { out = as_int(v.toInt()); }
void from_value(const c10::IValue& v, int64_t& out) { out = v.toInt(); }
void from_value(const c10::IValue& v, double& out) { out = v.toDouble(); }
void from_value(const c10::IValue& v, bool& out) { out = v.toBool(); }
void from_value(const c10::IValue& v, std::string& out) { out = v.toStringRef(); }
void from_value(const c10::IValue& v, c10::IValue& out) { out = v; }
void from_value(const c10::IValue& v, std::vector<std::string>& out) {
  for (const auto& line : v.toListRef())
    if (line.isString()) out.push_back(line.toStringRef());
}
// The run's totals as a dict of their numbers by name (run_totals.hpp).
c10::IValue to_value(const std::optional<RunTotals>& totals) {
  if (!totals) throw std::logic_error("a checkpoint is written with the run's totals");
  c10::impl::GenericDict d(c10::StringType::get(), c10::FloatType::get());
  for (const TotalsNumber& n : totals_numbers()) d.insert(std::string(n.limits.key), n.get(*totals));
  return d;
}
// Each number present, of its type and within the limits of its meaning, or
// TotalsProblem naming it: a damaged file never reaches the RESULT line.
struct TotalsProblem : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void from_value(const c10::IValue& v, std::optional<RunTotals>& out) {
  const c10::impl::GenericDict d = v.toGenericDict();
  RunTotals totals;
  for (const TotalsNumber& n : totals_numbers()) {
    const auto it = d.find(c10::IValue(std::string(n.limits.key)));
    if (it == d.end() || !it->value().isDouble())
      throw TotalsProblem(std::string("has no number '") + n.limits.key + "' in its run_totals");
    const double x = it->value().toDouble();
    const std::string problem = number_problem(n.limits, x, strprintf("%g", x));
    if (!problem.empty()) throw TotalsProblem(problem + " in its run_totals");
    n.set(totals, x);
  }
  out = totals;
}

template <typename T>
constexpr Kind kind_of() {
  if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) return Kind::Integer;
  else if constexpr (std::is_same_v<T, double>) return Kind::Real;
  else if constexpr (std::is_same_v<T, bool>) return Kind::Flag;
  else if constexpr (std::is_same_v<T, std::string>) return Kind::Text;
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return Kind::TextList;
  else return Kind::Dict;  // the model's state dict
}

enum class Holder {
  Header,  // format and format_version: written as constants, checked first
  Record,  // a Checkpoint member
  Part,    // a stateful part's entry (Checkpoint::parts)
};

struct Key {
  const char* name;
  Kind kind;
  int64_t since;  // the format version that added it; older files lack it
  bool required;  // false: may be absent (added within a version, or written only when there is one)
  Holder holder;
  c10::IValue (*get)(const Checkpoint&) = nullptr;         // Record: the value to write
  void (*set)(Checkpoint&, const c10::IValue&) = nullptr;  // Record: the value read
};

constexpr bool kRequired = true, kOptional = false;

// The Checkpoint member reached by the member pointers `Path` (c.*P1.*P2).
template <auto... Path>
Key record(const char* name, int64_t since = 1, bool required = kRequired) {
  using T = std::decay_t<decltype((std::declval<Checkpoint&>().*....*Path))>;
  return {name,
          kind_of<T>(),
          since,
          required,
          Holder::Record,
          [](const Checkpoint& c) { return to_value((c.*....*Path)); },
          [](Checkpoint& c, const c10::IValue& v) { from_value(v, (c.*....*Path)); }};
}
Key part(const char* name, Kind kind, int64_t since = 1, bool required = kRequired) {
  return {name, kind, since, required, Holder::Part};
}

// Every key of the file, in the order it is written.
const std::vector<Key>& key_table() {
  using C = Checkpoint;
  using R = StoredRunDefinition;
  using P = TrainingPosition;
  static const std::vector<Key> keys = {
      {"format", Kind::Text, 1, kRequired, Holder::Header, [](const C&) { return c10::IValue(kFormatTag); }},
      {"format_version", Kind::Integer, 1, kRequired, Holder::Header,
       [](const C&) { return c10::IValue(kCheckpointFormatVersion); }},
      record<&C::run, &R::model>("model_name"),
      record<&C::run, &R::optimizer>("optimizer_name"),
      record<&C::run, &R::world_size>("world_size"),
      record<&C::run, &R::batch_size>("batch_size"),
      record<&C::run, &R::accumulate>("accumulate"),
      record<&C::run, &R::train_size>("train_size"),
      record<&C::run, &R::data_identity>("data_identity", 1, kOptional),  // added within version 1
      record<&C::position, &P::epoch>("epoch"),
      record<&C::position, &P::batch_in_epoch>("batch_in_epoch"),
      record<&C::position, &P::step>("step"),
      record<&C::position, &P::order_world_size>("order_world_size", 2),
      record<&C::position, &P::order_batch_size>("order_batch_size", 3),
      record<&C::position, &P::batch_origin>("batch_origin", 3),
      record<&C::global_position>("global_position", 2),
      record<&C::run, &R::lr_global_batch>("lr_global_batch", 3),
      record<&C::run, &R::reshaped>("reshaped", 3),
      record<&C::epoch_loss_sum>("epoch_loss_sum"),
      record<&C::epoch_loss_count>("epoch_loss_count"),
      record<&C::run, &R::config>("config"),
      record<&C::model_state>("model"),
      part(OptimizerState::kKey, Kind::Tensor),
      part(DefaultGenerators::kCpuKey, Kind::Tensor),
      part(DefaultGenerators::kDeviceKey, Kind::Tensor, 1, kOptional),  // GPU runs only
      part(LossScaler::kScaleKey, Kind::Real),
      part(LossScaler::kCleanStepsKey, Kind::Integer),
      part(Lookahead::kAverageKey, Kind::TensorList, 1, kOptional),  // --lookahead-every only
      record<&C::skipped_steps>("skipped_steps", 1, kOptional),      // added within version 1
      record<&C::totals>("run_totals", 4),
  };
  return keys;
}

const Key& header_key(size_t i) { return key_table().at(i); }  // 0: format, 1: format_version

// ---- Reading ----------------------------------------------------------------

std::vector<char> read_bytes(const std::string& path) {
  // Before opening: a folder would fail deep in the stream library, a FIFO would block.
  // The whole file is read into memory: one larger than the machine's is no checkpoint of ours.
  const paths::FileCheck check = paths::check_regular_file(path, physical_memory_bytes());
  if (check.problem == paths::FileProblem::Missing)
    throw CheckpointError("cannot open checkpoint '" + path + "': no such file (check the path given to --resume)");
  if (!check)
    throw CheckpointError(checkpoint_message(path, " " + check.reason) +
                          " (--resume takes a checkpoint file, or auto for the newest in --checkpoint-dir)");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw CheckpointError("cannot open checkpoint '" + path + "': " + std::strerror(errno) +
                          " (check the path given to --resume)");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw CheckpointError("cannot read checkpoint '" + path + "': " + std::strerror(errno));
  return bytes;
}

// Runs `parse` and turns what LibTorch's parsers throw -- c10::Error (whose
// what() carries a backtrace), torch::jit::ErrorReport, std::runtime_error,
// an ArchiveError naming the entry -- into one CheckpointError:
// "checkpoint 'PATH'<problem>: <their message>".
// An entry that fails its CRC-32 says so: "checkpoint 'PATH' is damaged".
template <typename Parse>
auto rethrow_unreadable(const std::string& path, const std::string& problem, Parse&& parse) {
  try {
    return parse();
  } catch (const DamagedArchiveError& e) {
    throw unusable_checkpoint(path, std::string(" ") + kDamagedFile + ": " + e.what());
  } catch (const std::exception& e) {
    throw unusable_checkpoint(path, problem + ": " + error_text(e));
  }
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
      throw unusable_checkpoint(path, ": tensor '" + where + "' reaches past its storage (truncated or corrupt?)");
  } else if (v.isGenericDict()) {
    for (const auto& e : v.toGenericDict())
      check_tensor_bounds(e.value(), path,
                          where + (where.empty() ? "" : "/") + (e.key().isString() ? e.key().toStringRef() : "?"));
  } else if (v.isList()) {
    size_t i = 0;
    for (const auto& e : v.toListRef()) check_tensor_bounds(e, path, where + "[" + std::to_string(i++) + "]");
  }
}

// The file's top-level dict, every tensor in it checked against its storage.
c10::impl::GenericDict read_top_level_dict(const std::string& path) {
  const std::vector<char> bytes = read_bytes(path);
  const c10::IValue value =
      rethrow_unreadable(path, " is not readable (truncated or corrupt?)", [&] { return unpickle_zip(bytes); });
  if (!value.isGenericDict())
    throw unusable_checkpoint(path, " holds a " + value.tagKind() + ", not a cifar_mpi checkpoint");
  check_tensor_bounds(value, path, "");
  return value.toGenericDict();
}

// The entry of `key`, of its declared type, or none when it may be absent;
// a missing or mistyped required entry means the file is not a checkpoint
// this program wrote.
const c10::IValue* entry(const c10::impl::GenericDict& dict, const Key& key, const std::string& path) {
  const auto it = dict.find(c10::IValue(std::string(key.name)));
  if (it == dict.end() && !key.required) return nullptr;
  const KindCheck check = kind_check(key.kind);
  if (it == dict.end() || !(it->value().*check.is)())
    throw unusable_checkpoint(
        path, std::string(" has no ") + check.name + " '" + key.name + "': not a complete cifar_mpi checkpoint");
  return &it->value();
}

// The format tag and a version this program reads; returns the version.
int64_t checked_format_version(const c10::impl::GenericDict& dict, const std::string& path) {
  const auto tag = dict.find(c10::IValue(std::string(header_key(0).name)));
  if (tag == dict.end() || !tag->value().isString() || tag->value().toStringRef() != kFormatTag)
    throw CheckpointError("'" + path +
                          "' is not a cifar_mpi checkpoint (a model file? those are loaded with "
                          "load_state_dict, not --resume)" +
                          unusable_fix(path));
  const int64_t version = entry(dict, header_key(1), path)->toInt();
  if (version < 1 || version > kCheckpointFormatVersion)
    throw unusable_checkpoint(
        path, strprintf(" has format version %lld; this program reads versions 1 to %lld "
                        "(a newer cifar_mpi wrote it? resume it with that version)",
                        static_cast<long long>(version), static_cast<long long>(kCheckpointFormatVersion)));
  return version;
}

// The step shape is read as int64 and used in products: each part must fit an
// int and the global batch per step too (then every product below fits int64).
void check_step_shape(const StoredRunDefinition& r, const std::string& path) {
  const int64_t limit = std::numeric_limits<int>::max();
  const int64_t micro = static_cast<int64_t>(r.batch_size) * r.world_size;
  const bool each = r.batch_size >= 1 && r.world_size >= 1 && r.accumulate >= 1;
  if (!each || micro > limit || micro * r.accumulate > limit)
    throw unusable_checkpoint(path, strprintf(" holds a step of %d per rank x %d ranks x %d micro-batches: not a "
                                              "shape any run has (a damaged file)",
                                              r.batch_size, r.world_size, r.accumulate));
}

// Where the checkpoint is in its epoch's global order, and what --lr is for.
// Version 1 files predate elastic resume: their epoch followed their own
// world size, and the global position is the per-rank one times the world.
// Version 2 files record the order's world size and the global position;
// their global micro-batch never changed, so the order's per-rank batch
// follows. Version 3 files record it all. A global position that is not the
// origin plus the batches times the global micro-batch is a damaged file.
void complete_epoch_order(int64_t version, const std::string& path, Checkpoint& c) {
  TrainingPosition& p = c.position;
  const int64_t micro = static_cast<int64_t>(c.run.batch_size) * c.run.world_size;
  if (version < 2) p.order_world_size = c.run.world_size;
  if (version < 3) {
    p.order_batch_size =
        p.order_world_size >= 1 && micro % p.order_world_size == 0 ? static_cast<int>(micro / p.order_world_size) : -1;
    p.batch_origin = 0;
    c.run.lr_global_batch = micro * c.run.accumulate;
    c.run.reshaped = false;
  }
  // Numbers from the file: no product may overflow, and no run has more ranks than samples.
  int64_t derived = -1;
  const bool counted = p.batch_in_epoch >= 0 && p.batch_origin >= 0 &&
                       !__builtin_mul_overflow(static_cast<int64_t>(p.batch_in_epoch), micro, &derived) &&
                       !__builtin_add_overflow(derived, p.batch_origin, &derived);
  if (version < 2) c.global_position = derived;
  if (!counted || p.order_world_size < 1 || p.order_world_size > c.run.train_size || p.order_batch_size < 1 ||
      c.global_position != derived || c.run.lr_global_batch < 1)
    throw unusable_checkpoint(
        path, strprintf(" holds global position %lld, origin %lld, order %d ranks x %d and --lr's global batch %lld, "
                        "but %ld batch(es) of %d on %d ranks from that origin make position %lld: a damaged file",
                        static_cast<long long>(c.global_position), static_cast<long long>(p.batch_origin),
                        p.order_world_size, p.order_batch_size, static_cast<long long>(c.run.lr_global_batch),
                        p.batch_in_epoch, c.run.batch_size, c.run.world_size, static_cast<long long>(derived)));
}

// The parts' entries that restoring hands to LibTorch, checked now so that
// --resume auto passes over a damaged one as over any unreadable file: the
// optimiser state is a TorchScript archive of its own (its sizes and source
// files are checked: LibTorch's zip reader, unpickler and script compiler
// read it), and a damaged CPU generator state made LibTorch's set_state throw
// c10::Error ("Invalid mt19937 state") out of restoring, after the model and
// the optimiser were restored (found by the checkpoint fuzz harness).
void check_part_entries(const StateDict& parts, const std::string& path) {
  const std::string state = OptimizerState::archive_bytes(parts.at(std::string(OptimizerState::kKey)).toTensor());
  rethrow_unreadable(path, ": its optimiser state is not readable (corrupt?)", [&] {
    check_torch_archive(state.data(), state.size());
    check_module_sources(state.data(), state.size());
  });
  rethrow_unreadable(path, ": its CPU random-number state is not valid (corrupt?)", [&] {
    DefaultGenerators::check_cpu_state(parts.at(std::string(DefaultGenerators::kCpuKey)).toTensor());
  });
}

}  // namespace

std::vector<char> encode_checkpoint(const Checkpoint& c) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  size_t parts_written = 0;
  for (const Key& key : key_table()) {
    if (key.holder != Holder::Part) {
      d.insert(std::string(key.name), key.get(c));
    } else if (const auto it = c.parts.find(std::string(key.name)); it != c.parts.end()) {
      if (!(it->value().*kind_check(key.kind).is)())
        throw std::logic_error(std::string("checkpoint entry '") + key.name + "' is not a " +
                               kind_check(key.kind).name);
      d.insert(std::string(key.name), it->value());
      ++parts_written;
    }
  }
  if (parts_written != c.parts.size())
    throw std::logic_error("a stateful part saved a checkpoint entry that format.cpp's key table does not declare");
  return torch::pickle_save(c10::IValue(d));
}

Checkpoint read_checkpoint(const std::string& path) {
  const c10::impl::GenericDict dict = read_top_level_dict(path);
  const int64_t version = checked_format_version(dict, path);
  Checkpoint c;
  for (const Key& key : key_table()) {
    if (key.holder == Holder::Header || key.since > version) continue;
    const c10::IValue* value = entry(dict, key, path);
    if (!value) continue;
    if (key.holder != Holder::Record) {
      c.parts.insert(std::string(key.name), *value);
      continue;
    }
    try {
      key.set(c, *value);
    } catch (const TotalsProblem& e) {
      throw unusable_checkpoint(path, std::string(" ") + e.what() + " (a damaged file)");
    }
  }
  check_step_shape(c.run, path);
  complete_epoch_order(version, path, c);
  check_part_entries(c.parts, path);
  return c;
}

}  // namespace cifar
