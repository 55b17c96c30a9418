// Temp-name + fsync + rename publication (see atomic_file.hpp).
#include "data/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "util/error.hpp"

namespace cifar {
namespace {
void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw DataError("cannot open '" + path + "' to sync it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw DataError("fsync of '" + path + "' failed: " + std::strerror(err));
}
}  // namespace

std::string temporary_path_for(const std::string& final_path) {
  const std::filesystem::path p(final_path);
  const std::string name = "." + p.filename().string() + ".tmp-" + std::to_string(::getpid());
  return (p.parent_path() / name).string();
}

void publish_atomically(const std::string& temp_path, const std::string& final_path) {
  fsync_path(temp_path, O_RDONLY);
  if (std::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    throw DataError("cannot rename '" + temp_path + "' to '" + final_path + "': " + std::strerror(errno));
  }
  std::string folder = std::filesystem::path(final_path).parent_path().string();
  fsync_path(folder.empty() ? "." : folder, O_RDONLY | O_DIRECTORY);
}

TemporaryFileGuard::~TemporaryFileGuard() {
  if (!path_.empty()) std::remove(path_.c_str());
}

}  // namespace cifar
