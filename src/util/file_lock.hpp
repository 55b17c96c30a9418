// One job at a time per output: an exclusive flock() on a lock file, taken at
// start-up. The kernel releases a flock when its process ends, however it
// ends, so a crashed or killed job never leaves a lock stuck; the lock file
// itself holds the holder's host, pid, Slurm job id and start time, so that a
// refused job can name it.
#pragma once

#include <string>

namespace cifar {

class FileLock {
 public:
  FileLock() = default;
  // Takes the lock on `lock_path` (created if missing), or throws ConfigError
  // "<what> is in use by another job (<holder>; lock file <lock_path>) ...".
  // A file system without locks (some parallel file systems) gives a warning
  // and a FileLock that holds nothing.
  FileLock(const std::string& lock_path, const std::string& what);
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  // Deletes the lock file, then releases the lock.
  ~FileLock();

  bool held() const { return fd_ >= 0; }

 private:
  void release();

  int fd_ = -1;
  std::string path_;
};

// The refusal FileLock gives when another job holds `lock_path`, without
// taking the lock or creating the file (a pre-flight check leaves no trace):
// no lock file means no holder.
void require_unlocked(const std::string& lock_path, const std::string& what);

// "<folder>/.<name>.lock": the lock file that guards the output file `path`.
std::string lock_path_for(const std::string& path);

// "host vm, pid 1234, Slurm job 77, since 2025-01-31 12:00:00": this process,
// as a lock file names its holder.
std::string lock_holder_text();

}  // namespace cifar
