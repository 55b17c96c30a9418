// flock()-based lock files (see file_lock.hpp).
#include "util/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <utility>

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

std::string read_holder(int fd) {
  char buffer[512];
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  std::string text(buffer, n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text.empty() ? "holder unknown" : text;
}

void write_holder(int fd) {
  const std::string text = lock_holder_text() + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    log::warn(std::string("cannot record this job in its lock file: ") + std::strerror(errno));
}

// Whether `fd` is still the file at `path`: a holder deletes its lock file
// when it ends, so a lock taken on a file already unlinked guards nothing.
bool still_at_path(int fd, const std::string& path) {
  struct stat open_file {
  }, named{};
  return ::fstat(fd, &open_file) == 0 && ::stat(path.c_str(), &named) == 0 && open_file.st_dev == named.st_dev &&
         open_file.st_ino == named.st_ino;
}

// The refusal of a lock that another job holds, naming the holder that `fd` records.
std::string in_use(const std::string& what, int fd, const std::string& lock_path) {
  return what + " is in use by another job (" + read_holder(fd) + "; lock file " + lock_path +
         "): two jobs would overwrite each other's files; wait for it to end, or give this job its own paths";
}

}  // namespace

std::string lock_path_for(const std::string& path) {
  return paths::join(paths::parent(path), "." + paths::file_name(path) + ".lock");
}

std::string lock_holder_text() {
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  const char* job = std::getenv("SLURM_JOB_ID");
  char since[32] = "?";
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  if (::localtime_r(&now, &local)) std::strftime(since, sizeof since, "%Y-%m-%d %H:%M:%S", &local);
  return strprintf("host %s, pid %d%s, since %s", host, static_cast<int>(::getpid()),
                   job && *job ? (std::string(", Slurm job ") + job).c_str() : "", since);
}

FileLock::FileLock(const std::string& lock_path, const std::string& what) : path_(lock_path) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      throw ConfigError(what + ": cannot create the lock file " + lock_path + " (" + std::strerror(errno) +
                        "); choose a writable path");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK) {
        const std::string why = in_use(what, fd, lock_path);
        ::close(fd);
        throw ConfigError(why);
      }
      ::close(fd);
      log::warn(what + ": cannot lock " + lock_path + " (" + std::strerror(err) +
                "; a file system without locks?): another job using the same paths would not be detected");
      path_.clear();
      return;
    }
    if (still_at_path(fd, lock_path)) {
      fd_ = fd;
      write_holder(fd_);
      return;
    }
    ::close(fd);  // its holder deleted it between our open and flock: take the new one
  }
  throw ConfigError(what + ": the lock file " + lock_path +
                    " keeps being replaced; is another job starting and "
                    "stopping on the same paths?");
}

void require_unlocked(const std::string& lock_path, const std::string& what) {
  const int fd = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return;  // no lock file, no holder; its folder is checked elsewhere
    throw ConfigError(what + ": cannot open the lock file " + lock_path + " (" + std::strerror(errno) +
                      "); choose a writable path");
  }
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    const std::string why = in_use(what, fd, lock_path);
    ::close(fd);
    throw ConfigError(why);
  }
  ::close(fd);  // releases the shared lock
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

FileLock::~FileLock() { release(); }

void FileLock::release() {
  if (fd_ < 0) return;
  // Deleted while still held: a job that opened it meanwhile finds, after its
  // flock, that the file is no longer at the path, and starts over.
  ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

}  // namespace cifar
