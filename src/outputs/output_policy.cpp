// The output rules shared by every program (see output_policy.hpp).
#include "outputs/output_policy.hpp"

#include <sys/stat.h>

#include <fstream>

#include "outputs/checkpoint_files.hpp"
#include "outputs/owner_records.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar {
std::string file_head(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(n, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  return paths::absolute(a) == paths::absolute(b);
}

std::string check_tool_output(const std::string& program, const NamedFile& output, const OutputFileKind& kind,
                              const std::vector<NamedFile>& inputs) {
  if (output.path.empty()) return "";
  const std::string what = program + ": --" + output.option + " " + output.path;
  const std::string instead = "; choose another --" + output.option;
  const paths::FileCheck existing = paths::check_regular_file(output.path);
  if (!existing && existing.problem != paths::FileProblem::Missing)  // a folder, a device, one it cannot read
    throw ConfigError(what + " " + existing.reason + "; name a regular file to write");
  for (const auto& in : inputs)
    if (!in.path.empty() && same_file(output.path, in.path))
      throw ConfigError(what + " is the same file as --" + in.option + " " + in.path +
                        ": an output never replaces an input" + instead);
  if (is_checkpoint_file_name(paths::file_name(output.path)))
    throw ConfigError(what + " is named like a checkpoint, which --resume auto in its folder would take for one" +
                      instead);
  // A record whose file is gone guards nothing (as for cifar_mpi's outputs).
  const std::string record_path = owner_record_path(output.path);
  const RecordRead record = existing ? examine_owner_record(record_path) : RecordRead{};
  if (record.record)
    throw ConfigError(what + " is a " + record.record->kind + " file of run " + record.record->run +
                      " (its checkpoints in " + record.record->checkpoint_dir + "; owner record " + record_path +
                      "): no program replaces a file a run owns" + instead);
  if (!record.problem.empty())
    throw ConfigError(what + " has an owner record " + record_path + " that " + record.problem +
                      ", so whose file it is cannot be told, and no program replaces a file a run owns" + instead);
  paths::require_writable_file(output.option, output.path);
  if (!existing) return "";
  if (existing.size > 0 && file_head(output.path, kind.signature.size()) != kind.signature)
    throw ConfigError(what + " exists and is not of the kind --" + output.option + " writes (" + kind.name +
                      "): a program replaces only its own earlier output" + instead + ", or move the file away");
  return strprintf("replaced the earlier %s %s (%lld bytes)", kind.name.c_str(), output.path.c_str(), existing.size);
}

}  // namespace cifar
