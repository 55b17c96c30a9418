// Owner records of a run's files (see owner_records.hpp).
#include "outputs/owner_records.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

#include "outputs/checkpoint_files.hpp"
#include "outputs/output_policy.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/md5.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

constexpr const char* kHeader = "cifar_mpi output";
constexpr size_t kMaxRecordBytes = 4096;  // a record is a few lines; anything longer is not one

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size) : -1;
}

bool has_event_files(const std::string& folder) {
  if (!paths::is_directory(folder)) return false;
  for (const auto& name : paths::list(folder))
    if (name.find("tfevents") != std::string::npos) return true;
  return false;
}

std::string owner_text(const OwnerRecord& r) { return "run " + r.run + ", its checkpoints in " + r.checkpoint_dir; }

}  // namespace

std::string owner_record_name(const std::string& name) { return "." + name + ".run"; }

std::string recorded_file_name(const std::string& record_name) {
  constexpr size_t kSuffix = 4;  // ".run"
  const size_t n = record_name.size();
  if (n <= 1 + kSuffix || record_name.front() != '.' || record_name.compare(n - kSuffix, kSuffix, ".run") != 0)
    return "";
  return record_name.substr(1, n - 1 - kSuffix);
}

std::string owner_record_path(const std::string& path) {
  return paths::join(paths::parent(paths::absolute(path)), owner_record_name(paths::file_name(path)));
}

std::string folder_record_path(const std::string& folder) { return paths::join(folder, ".cifar_mpi.run"); }

RecordRead examine_owner_record(const std::string& record_path) {
  // A regular, readable file of a record's size at most, by the inputs' own stat check.
  const paths::FileCheck check = paths::check_regular_file(record_path, static_cast<long long>(kMaxRecordBytes));
  if (check.problem == paths::FileProblem::Missing) return {};
  if (!check) return {std::nullopt, check.reason};
  if (check.size == 0) return {std::nullopt, "is empty"};
  std::string number_problem;
  auto record = parse_owner_record(file_head(record_path, kMaxRecordBytes), &number_problem);
  if (!number_problem.empty()) return {std::nullopt, number_problem, true};
  if (!record) return {std::nullopt, "is not an owner record cifar_mpi wrote"};
  return {std::move(record), ""};
}

std::optional<OwnerRecord> read_owner_record(const std::string& record_path) {
  return examine_owner_record(record_path).record;
}

std::string owner_record_problem(const std::string& record_path) { return examine_owner_record(record_path).problem; }

namespace {

// A checkpoint's size in bytes (up to 1 PiB); the totals' numbers are RunTotals'.
constexpr NumberLimits kSize = {"size", "a file size in bytes", 0, 1125899906842624.0, -1};

// The number `text` of `limits.key`, or why it is not one that key can hold.
std::optional<double> read_number(const NumberLimits& limits, const std::string& text, std::string* problem) {
  char* end = nullptr;
  errno = 0;
  const double x = text.empty() ? std::nan("") : std::strtod(text.c_str(), &end);
  const bool reads = !text.empty() && end == text.c_str() + text.size() && errno != ERANGE;
  const std::string why = number_problem(limits, reads ? x : std::nan(""), text);
  if (why.empty()) return x;
  if (problem) *problem = why;
  return std::nullopt;
}

}  // namespace

std::optional<OwnerRecord> parse_owner_record(const std::string& text, std::string* problem) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kHeader) return std::nullopt;
  std::map<std::string, std::string> v;
  while (std::getline(in, line)) {
    const auto space = line.find(' ');
    if (space != std::string::npos) v[line.substr(0, space)] = line.substr(space + 1);
  }
  OwnerRecord r;
  r.run = v["run"];
  r.kind = v["kind"];
  r.checkpoint_dir = v["checkpoint-dir"];
  if (r.run.empty() || r.kind.empty()) return std::nullopt;
  // Every number is checked against the limits of its meaning before it is
  // used: a hand-edited or damaged record never reaches the RESULT line.
  auto read = [&](const NumberLimits& limits, double fallback) -> std::optional<double> {
    const auto it = v.find(limits.key);
    return it == v.end() ? fallback : read_number(limits, it->second, problem);
  };
  const auto size = read(kSize, -1);
  if (!size) return std::nullopt;
  r.size = static_cast<int64_t>(*size);
  for (const TotalsNumber& n : totals_numbers()) {  // an older version's record of a checkpoint
    const auto x = read(n.limits, n.get(RunTotals{}));
    if (!x) return std::nullopt;
    n.set(r.totals, *x);
  }
  return r;
}

void require_sound_owner_record(const std::string& path) {
  const std::string record = owner_record_path(path);
  const RecordRead read = examine_owner_record(record);
  if (read.damaged)
    throw CheckpointError("owner record " + record + " of " + path + " " + read.problem +
                          ": the record is damaged or was edited; restore it, or delete it to continue from " + path +
                          " as a checkpoint without a record");
}

void write_owner_record(const std::string& record_path, const OwnerRecord& r) {
  const std::string text = owner_record_text(r);
  write_file_atomically(record_path, std::vector<char>(text.begin(), text.end()));
}

std::string owner_record_text(const OwnerRecord& r) {
  std::string text =
      std::string(kHeader) + "\nrun " + r.run + "\nkind " + r.kind + "\ncheckpoint-dir " + r.checkpoint_dir + "\n";
  if (r.kind == "checkpoint") text += strprintf("size %lld\n", static_cast<long long>(r.size));
  return text;
}

std::optional<OwnerRecord> checkpoint_record(const std::string& path) {
  auto record = read_owner_record(owner_record_path(path));
  if (!record || record->kind != "checkpoint" || record->size != file_size(path)) return std::nullopt;
  return record;
}

std::optional<OwnerRecord> checkpoint_record_of(const std::string& path, const std::string& run_id) {
  auto record = checkpoint_record(path);
  if (!record || run_id.empty() || record->run != run_id) return std::nullopt;
  return record;
}

void check_output_kinds(const RunConfig& c) {
  struct Output {
    const char* option;
    std::string path;
    const char* kind;
  };
  for (const Output& o : {Output{"output", c.output.model, "model"}, Output{"metrics", c.output.metrics, "metrics"}}) {
    if (o.path.empty() || file_size(o.path) < 0) continue;
    const std::string what = std::string("--") + o.option + " " + o.path;
    if (const auto record = read_owner_record(owner_record_path(o.path)); record && record->kind != o.kind)
      throw ConfigError(what + " is a " + record->kind + " file (" + owner_text(*record) + "), not a " + o.kind +
                        " file: a run never replaces a file of another kind; choose another --" + o.option);
    if (file_size(o.path) == 0) continue;
    const std::string head = file_head(o.path, 10);
    const bool is_zip = head.rfind("PK\x03\x04", 0) == 0;
    if (std::string(o.kind) == "model" && !is_zip)
      throw ConfigError(what +
                        " exists and is not a model file (not a zip archive as torch writes): a run never "
                        "replaces a file of another kind; choose another --output, or move the file away");
    if (std::string(o.kind) == "metrics" && head.rfind("{\"epoch\": ", 0) != 0)
      throw ConfigError(what +
                        " exists and is not a metrics file (its first line is not a metrics row): a run "
                        "never replaces a file of another kind; choose another --metrics, or move the file away");
  }
  const std::string& dir = c.checkpoint.dir;
  const std::string& tensorboard = c.output.tensorboard;
  if (c.checkpoint.enabled() && !tensorboard.empty() && paths::absolute(dir) == paths::absolute(tensorboard))
    throw ConfigError("--checkpoint-dir and --tensorboard name the same folder " + dir + "; give each its own folder");
  if (c.checkpoint.enabled() && has_event_files(dir))
    throw ConfigError("--checkpoint-dir " + dir +
                      " holds TensorBoard event files: it is a --tensorboard folder; "
                      "choose another (empty) --checkpoint-dir");
  if (!tensorboard.empty() && !list_checkpoints(tensorboard).empty())
    throw ConfigError("--tensorboard " + tensorboard +
                      " holds checkpoints: it is a --checkpoint-dir; choose "
                      "another --tensorboard folder");
}

void check_output_owners(const RunConfig& c, const std::string& run_id, const std::string& run_folder) {
  struct Output {
    const char* option;
    std::string path, record;
  };
  std::vector<Output> outputs{{"output", c.output.model, owner_record_path(c.output.model)}};
  if (!c.output.metrics.empty()) outputs.push_back({"metrics", c.output.metrics, owner_record_path(c.output.metrics)});
  if (!c.output.tensorboard.empty())
    outputs.push_back({"tensorboard", c.output.tensorboard, folder_record_path(c.output.tensorboard)});
  for (const Output& o : outputs) {
    // A record whose file is gone guards nothing (the file was deleted).
    if (!paths::exists(o.path)) continue;
    const std::string what = std::string("--") + o.option + " " + o.path;
    // A guard that cannot be read proves nothing either way: it refuses.
    const RecordRead read = examine_owner_record(o.record);
    if (!read.problem.empty())
      throw ConfigError(what + ": its owner record " + o.record + " " + read.problem +
                        ", so whose file it is cannot be told, and a run never replaces another run's files; if it "
                        "is yours to replace, delete " +
                        o.record + ", else give this run its own --" + o.option);
    const auto& record = read.record;
    if (!record) continue;
    const std::string continue_it = "continue that run (--checkpoint-dir " + record->checkpoint_dir + " --resume auto)";
    if (record->run != run_id)
      throw ConfigError(what + " belongs to another run (" + owner_text(*record) + "; owner record " + o.record +
                        "): a run never replaces or appends to another run's files; " + continue_it +
                        ", or give this run its own --" + o.option);
    // The same run from another checkpoint folder while the first still
    // exists: a copy of it resumed (a fork), which must not replace the
    // files of the run it came from. A folder that was moved continues.
    const std::string here = run_folder.empty() ? "" : paths::resolved(run_folder);
    if (!here.empty() && here != record->checkpoint_dir && paths::is_directory(record->checkpoint_dir))
      throw ConfigError(what + " belongs to run " + record->run + " of --checkpoint-dir " + record->checkpoint_dir +
                        ", and this run continues a copy of it from " + here +
                        ": a copy never replaces the files of the run it came from; give it its own --" + o.option +
                        ", or " + continue_it);
  }
}

OwnerRecord owner_record(const std::string& run_id, const std::string& kind, const std::string& checkpoint_dir) {
  OwnerRecord r;
  r.run = run_id;
  r.kind = kind;
  r.checkpoint_dir = paths::resolved(checkpoint_dir);
  return r;
}

void claim_output(const std::string& path, const std::string& kind, const std::string& run_id,
                  const std::string& checkpoint_dir) {
  if (run_id.empty() || path.empty()) return;
  const OwnerRecord r = owner_record(run_id, kind, checkpoint_dir);
  write_owner_record(kind == "tensorboard" ? folder_record_path(path) : owner_record_path(path), r);
}

void write_recorded_file(const std::string& path, const std::function<void()>& write) {
  try {
    write();
  } catch (...) {
    if (!paths::exists(path)) ::unlink(owner_record_path(path).c_str());
    throw;
  }
}

void claim_outputs(const OutputConfig& output, const std::string& run_id, const std::string& checkpoint_dir) {
  claim_output(output.model, "model", run_id, checkpoint_dir);
  claim_output(output.metrics, "metrics", run_id, checkpoint_dir);
  claim_output(output.tensorboard, "tensorboard", run_id, checkpoint_dir);
}

}  // namespace cifar
