// Scratch folder and seed-writing mode of the fuzz harnesses (fuzz_support.hpp).
#include "fuzz_support.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "util/paths.hpp"

namespace cifar::fuzz {
namespace {

constexpr const char* kScratchPrefix = "cifar_fuzz.";

// Removes the scratch folders of harness processes that are gone. A harness
// that crashes, or that libFuzzer ends after a timeout (and fork mode ends
// every job), never runs its atexit handler, and the cifar_binary harness's
// folders hold up to 180 MB each: 25 minutes of campaign left 418 of them, 2 GB
// of /dev/shm. Each folder is named cifar_fuzz.<pid>.XXXXXX.
void remove_stale_scratch(const std::string& base) {
  for (const std::string& name : paths::list(base)) {
    if (name.rfind(kScratchPrefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + std::strlen(kScratchPrefix), nullptr, 10);
    if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH))
      paths::remove_all(paths::join(base, name));
  }
}

std::string make_scratch() {
  // /dev/shm keeps the per-input writes in memory; else $TMPDIR or /tmp.
  std::string base = paths::temp_directory();
  if (access("/dev/shm", W_OK) == 0) base = "/dev/shm";
  remove_stale_scratch(base);
  std::string name = paths::join(base, kScratchPrefix + std::to_string(::getpid()) + ".XXXXXX");
  if (::mkdtemp(name.data()) == nullptr) {
    std::fprintf(stderr, "fuzz: cannot create a scratch folder %s: %s\n", name.c_str(), std::strerror(errno));
    std::abort();
  }
  return name;
}

void remove_scratch() { paths::remove_all(scratch_dir()); }

}  // namespace

const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string d = make_scratch();
    std::atexit(remove_scratch);
    return d;
  }();
  return dir;
}

void write_file(const std::string& path, const void* data, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("fuzz: cannot create " + path + ": " + std::strerror(errno));
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw std::runtime_error("fuzz: cannot write " + path + ": " + std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  ::close(fd);
}

std::string write_scratch_file(const std::string& name, const void* data, size_t size) {
  const std::string path = paths::join(scratch_dir(), name);
  write_file(path, data, size);
  return path;
}

void clear_scratch() {
  for (const std::string& name : paths::list(scratch_dir())) paths::remove_all(paths::join(scratch_dir(), name));
}

}  // namespace cifar::fuzz

// libFuzzer calls this once before the first input.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("CIFAR_FUZZ_WRITE_SEEDS");
  if (dir == nullptr || *dir == '\0') return 0;
  const std::string why = cifar::paths::create_directories(dir);
  if (!why.empty()) {
    std::fprintf(stderr, "fuzz: cannot create %s: %s\n", dir, why.c_str());
    std::exit(1);
  }
  cifar::fuzz::write_seeds(dir);
  std::fprintf(stderr, "fuzz: seeds written to %s\n", dir);
  std::exit(0);
}
