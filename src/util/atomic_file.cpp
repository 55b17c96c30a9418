// Temp-name + fsync + rename publication (see atomic_file.hpp).
#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <regex>

#include "util/error.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {
void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw Error("cannot open '" + path + "' to sync it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw Error("fsync of '" + path + "' failed: " + std::strerror(err));
}
}  // namespace

std::string temporary_path_for(const std::string& final_path) {
  const std::string name = "." + paths::file_name(final_path) + ".tmp-" + std::to_string(::getpid());
  return paths::join(paths::parent(final_path), name);
}

std::vector<std::string> remove_stale_temporaries(const std::string& folder,
                                                  const std::function<bool(const std::string&)>& is_ours) {
  static const std::regex pattern(R"(\.(.+)\.tmp-\d+)");  // temporary_path_for()'s names
  std::vector<std::string> removed;
  if (!paths::is_directory(folder)) return removed;
  for (const std::string& name : paths::list(folder)) {
    std::smatch m;
    if (!std::regex_match(name, m, pattern) || !is_ours(m[1])) continue;
    if (std::remove(paths::join(folder, name).c_str()) == 0) removed.push_back(name);
  }
  return removed;
}

void publish_atomically(const std::string& temp_path, const std::string& final_path) {
  fsync_path(temp_path, O_RDONLY);
  if (std::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    throw Error("cannot rename '" + temp_path + "' to '" + final_path + "': " + std::strerror(errno));
  }
  const std::string folder = paths::parent(final_path);
  fsync_path(folder.empty() ? "." : folder, O_RDONLY | O_DIRECTORY);
}

void write_file_atomically(const std::string& path, const std::vector<char>& bytes) {
  const std::string temp = temporary_path_for(path);
  TemporaryFileGuard guard(temp);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    throw Error("cannot write '" + path + "': cannot create '" + temp + "': " + std::strerror(errno) +
                " (does the folder exist and is it writable?)");
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      throw Error("cannot write '" + temp + "': " + reason + " (disk full?)");
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) throw Error("cannot close '" + temp + "': " + std::strerror(errno));
  publish_atomically(temp, path);
  guard.release();
}

TemporaryFileGuard::~TemporaryFileGuard() {
  if (!path_.empty()) std::remove(path_.c_str());
}

}  // namespace cifar
