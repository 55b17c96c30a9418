// Capturing NCCL's set-up log (see nccl_log.hpp).
#include "comm/nccl_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <strings.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "util/paths.hpp"

namespace cifar {

NcclLogCapture::NcclLogCapture(bool enabled) {
  if (!enabled || std::getenv("NCCL_DEBUG_FILE")) return;
  const char* level = std::getenv("NCCL_DEBUG");
  user_wants_info_ = level && (strcasecmp(level, "INFO") == 0 || strcasecmp(level, "TRACE") == 0);
  if (!user_wants_info_) {
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT", 0);
  }
  path_ = paths::join(paths::temp_directory(), "cifar-nccl-log-XXXXXX");
  const int fd = mkstemp(path_.data());
  if (fd < 0) {
    path_.clear();
    return;
  }
  std::fflush(stdout);
  saved_stdout_ = dup(STDOUT_FILENO);
  if (saved_stdout_ < 0 || dup2(fd, STDOUT_FILENO) < 0) {
    if (saved_stdout_ >= 0) close(saved_stdout_);
    saved_stdout_ = -1;
  }
  close(fd);
}

NcclLogCapture::~NcclLogCapture() {
  if (capturing()) finish();
}

std::vector<std::string> NcclLogCapture::finish() {
  std::vector<std::string> lines;
  if (!capturing()) return lines;
  std::fflush(stdout);
  dup2(saved_stdout_, STDOUT_FILENO);
  close(saved_stdout_);
  saved_stdout_ = -1;
  {
    std::ifstream in(path_);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  unlink(path_.c_str());
  for (const auto& line : lines) {
    if (user_wants_info_ || line.find(" NCCL INFO ") == std::string::npos) std::printf("%s\n", line.c_str());
  }
  std::fflush(stdout);
  return lines;
}

}  // namespace cifar
