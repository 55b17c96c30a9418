// Start-up checks and locks of the run's outputs (see run_outputs.hpp).
#include "outputs/run_outputs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "outputs/checkpoint_files.hpp"
#include "outputs/output_policy.hpp"
#include "outputs/owner_records.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

struct NamedPath {
  std::string option;  // "output", "metrics", ...
  std::string path;
};

paths::FolderUse folder_use(OutputUse use) {
  return use == OutputUse::Claim ? paths::FolderUse::Create : paths::FolderUse::Check;
}

// Creates and deletes the temporary file that writing `path` will use: what
// only the file itself can tell (a name too long, a full inode table, a
// quota) fails now, not after the run.
void probe_temporary(const std::string& option, const std::string& value, const std::string& path) {
  const std::string temp = temporary_path_for(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw ConfigError("--" + option + " " + value + ": cannot create " + temp + " (" + std::strerror(errno) +
                      "); choose another path");
  ::close(fd);
  ::unlink(temp.c_str());
}

// An output file is replaced by rename() at the end: it must be a regular
// file or absent, its folder writable, and a file creatable beside it.
void check_output_file(const NamedPath& o, OutputUse use) {
  const paths::FileCheck check = paths::check_regular_file(o.path);
  if (check.problem == paths::FileProblem::Folder || check.problem == paths::FileProblem::NotRegular)
    throw ConfigError("--" + o.option + " " + o.path + " " + check.reason + "; name a file to write");
  paths::require_writable_file(o.option, o.path, folder_use(use));
  if (use == OutputUse::Claim || paths::is_directory(paths::parent(paths::absolute(o.path))))
    probe_temporary(o.option, o.path, o.path);
}

// The owner record written beside an output file (owner_records.hpp) must
// be writable too: a folder or a device in its place fails only at the end.
void check_record_path(const NamedPath& o) {
  const std::string record = owner_record_path(o.path);
  const paths::FileCheck check = paths::check_regular_file(record);
  if (check.problem == paths::FileProblem::Folder || check.problem == paths::FileProblem::NotRegular)
    throw ConfigError("--" + o.option + " " + o.path + ": its owner record " + record + " " + check.reason +
                      "; move it away, or choose another --" + o.option);
}

std::vector<NamedPath> output_files(const RunConfig& c) {
  std::vector<NamedPath> outputs = {{"output", c.output.model}};
  if (!c.output.metrics.empty()) outputs.push_back({"metrics", c.output.metrics});
  return outputs;
}

// An output file at or above a folder the run makes (--checkpoint-dir Y/ck
// with --output Y): start-up would make the folder in the file's place, and
// the file could never be written.
void check_files_are_not_folders(const RunConfig& c) {
  std::vector<NamedPath> folders;
  if (c.checkpoint.enabled()) folders.push_back({"checkpoint-dir", c.checkpoint.dir});
  if (!c.output.tensorboard.empty()) folders.push_back({"tensorboard", c.output.tensorboard});
  for (const auto& o : output_files(c)) folders.push_back({o.option, paths::parent(paths::absolute(o.path))});
  for (const auto& file : output_files(c)) {
    const std::string f = paths::absolute(file.path);
    for (const auto& folder : folders) {
      const std::string d = paths::absolute(folder.path);
      if (d == f || d.rfind(f + "/", 0) == 0)
        throw ConfigError("--" + file.option + " " + file.path + " is a folder that --" + folder.option + " " +
                          folder.path + " needs: a file and a folder cannot share a path; choose another --" +
                          file.option);
    }
  }
}

// An output named like a checkpoint inside --checkpoint-dir would be taken
// for one by every --resume auto.
void check_outputs_beside_checkpoints(const RunConfig& c) {
  if (!c.checkpoint.enabled()) return;
  const std::string dir = paths::absolute(c.checkpoint.dir);
  for (const auto& o : output_files(c))
    if (paths::parent(paths::absolute(o.path)) == dir && is_checkpoint_file_name(paths::file_name(o.path)))
      throw ConfigError("--" + o.option + " " + o.path + " is named like a checkpoint inside --checkpoint-dir " +
                        c.checkpoint.dir + ", where --resume auto would take it for one; choose another --" + o.option);
}

std::vector<NamedPath> input_files(const RunConfig& c) {
  std::vector<NamedPath> inputs = {{"data", c.data.path}};
  if (!c.config_file.empty()) inputs.push_back({"config", c.config_file});
  if (c.checkpoint.resume.kind == ResumeRequest::Kind::Path) inputs.push_back({"resume", c.checkpoint.resume.path});
  return inputs;
}

void check_outputs_are_not_inputs(const RunConfig& c) {
  const auto outputs = output_files(c);
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (const auto& in : input_files(c)) {
      if (same_file(outputs[i].path, in.path))
        throw ConfigError("--" + outputs[i].option + " " + outputs[i].path + " is the same file as --" + in.option +
                          " " + in.path + ": an output never overwrites an input; choose another path");
    }
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      if (same_file(outputs[i].path, outputs[j].path))
        throw ConfigError("--" + outputs[i].option + " and --" + outputs[j].option + " name the same file " +
                          outputs[i].path + "; give each its own path");
    }
  }
}

void report_removed(const std::string& folder, const std::vector<std::string>& names) {
  for (const auto& name : names)
    log::info("removed " + paths::join(folder, name) + ", a partial file left by an interrupted run");
}

}  // namespace

std::string checkpoint_lock_path(const std::string& checkpoint_dir) {
  return paths::join(checkpoint_dir, ".cifar_mpi.lock");
}

void RunOutputs::MadeFolders::note_missing(const std::string& folder) {
  for (std::string f = paths::absolute(folder); !f.empty() && f != "/" && !paths::exists(f); f = paths::parent(f))
    if (std::find(folders.begin(), folders.end(), f) == folders.end()) folders.push_back(f);
  std::sort(folders.begin(), folders.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });  // deepest first
}

RunOutputs::MadeFolders::~MadeFolders() {
  for (const auto& f : folders) ::rmdir(f.c_str());  // fails, as it should, on a folder with files
}

RunOutputs::RunOutputs(const RunConfig& config, OutputUse use) {
  const bool claim = use == OutputUse::Claim;
  const auto outputs = output_files(config);
  check_files_are_not_folders(config);  // before any folder is made
  check_outputs_beside_checkpoints(config);
  if (claim) {
    for (const auto& o : outputs) made_.note_missing(paths::parent(paths::absolute(o.path)));
    if (config.checkpoint.enabled()) made_.note_missing(config.checkpoint.dir);
    if (!config.output.tensorboard.empty()) made_.note_missing(config.output.tensorboard);
  }
  for (const auto& o : outputs) {
    check_output_file(o, use);
    check_record_path(o);
  }
  check_outputs_are_not_inputs(config);
  check_output_kinds(config);
  const std::string& dir = config.checkpoint.dir;
  if (config.checkpoint.enabled()) {
    paths::require_writable_folder("checkpoint-dir", dir, dir, folder_use(use));
    if (claim || paths::is_directory(dir))
      probe_temporary("checkpoint-dir", dir, paths::join(dir, checkpoint_file_name({0, 0, 0})));
  }
  const std::string& tensorboard = config.output.tensorboard;
  if (!tensorboard.empty())
    paths::require_writable_folder("tensorboard", tensorboard, paths::absolute(tensorboard), folder_use(use));
  // Two writers of one --tensorboard folder would each purge the other's
  // curves (a file's SessionLog START): one job at a time, as for checkpoints.
  if (!tensorboard.empty()) {
    const std::string what = "--tensorboard " + tensorboard;
    if (claim) {
      locks_.emplace_back(checkpoint_lock_path(tensorboard), what);
      const std::string record = paths::file_name(folder_record_path(tensorboard));
      report_removed(tensorboard,
                     remove_stale_temporaries(tensorboard, [&](const std::string& n) { return n == record; }));
    } else {
      require_unlocked(checkpoint_lock_path(tensorboard), what);
    }
  }
  for (const auto& o : outputs) {
    const std::string what = "--" + o.option + " " + o.path;
    if (!claim) {
      require_unlocked(lock_path_for(o.path), what);
      continue;
    }
    locks_.emplace_back(lock_path_for(o.path), what);
    const std::string folder = paths::parent(paths::absolute(o.path)), name = paths::file_name(o.path);
    report_removed(folder, remove_stale_temporaries(folder, [&](const std::string& n) {
                     return n == name || n == owner_record_name(name);
                   }));
  }
  if (config.checkpoint.enabled()) {
    const std::string what = "--checkpoint-dir " + dir;
    if (!claim) {
      require_unlocked(checkpoint_lock_path(dir), what);
    } else {
      locks_.emplace_back(checkpoint_lock_path(dir), what);
      report_removed(dir, remove_stale_temporaries(dir, [](const std::string& n) {
                       return is_checkpoint_file_name(n) || is_checkpoint_file_name(recorded_file_name(n));
                     }));
    }
  }
}

}  // namespace cifar
