// Atomic publication of a written file: callers write under temporary_path_for()
// and call publish_atomically() when the file is complete; a crash at any point
// leaves either the old file or the new one under the final name, never a part.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace cifar {

// Writes `bytes` to `path` this way in one call; errors name the path and
// the system's reason (does the folder exist, is it writable?).
void write_file_atomically(const std::string& path, const std::vector<char>& bytes);

// "<dir>/.<name>.tmp-<pid>": same folder (rename must not cross file systems).
std::string temporary_path_for(const std::string& final_path);

// Deletes the temporary files in `folder` (of any process id) whose final
// name satisfies `is_ours`: what a killed writer left behind. Call only while
// holding the lock on those outputs (util/file_lock.hpp), when no other
// process can be writing them. Returns the names deleted.
std::vector<std::string> remove_stale_temporaries(const std::string& folder,
                                                  const std::function<bool(const std::string&)>& is_ours);

// fsync(temp), rename(temp, final), fsync(folder). Throws Error naming both paths.
void publish_atomically(const std::string& temp_path, const std::string& final_path);

// Removes the temporary file on scope exit unless it was published (error paths).
class TemporaryFileGuard {
 public:
  explicit TemporaryFileGuard(std::string path) : path_(std::move(path)) {}
  TemporaryFileGuard(const TemporaryFileGuard&) = delete;
  TemporaryFileGuard& operator=(const TemporaryFileGuard&) = delete;
  ~TemporaryFileGuard();
  void release() { path_.clear(); }

 private:
  std::string path_;
};

}  // namespace cifar
