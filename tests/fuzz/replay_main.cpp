// A main() for the fuzz harnesses without libFuzzer: the builds that are not
// fuzzing builds (the cpu preset, gcc) replay every committed input through
// the same LLVMFuzzerTestOneInput, so a seed or regression input that starts
// crashing again fails the ordinary unit tests too, not only cpu-debug's.
//
// Usage: <name>_replay PATH...  Each PATH is a file or a folder of files
// (read in name order). Exits 0 once every input has run; a crash, a trap of
// the harness or an unexpected exception ends the process with a failure.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "util/paths.hpp"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The files a command-line PATH names: itself, or a folder's files in name order.
std::vector<std::string> input_files(const std::string& path) {
  if (!cifar::paths::is_directory(path)) return {path};
  std::vector<std::string> files;
  for (const std::string& name : cifar::paths::list(path)) files.push_back(cifar::paths::join(path, name));
  return files;
}

bool replay(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot open %s\n", path.c_str());
    return false;
  }
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  LLVMFuzzerInitialize(&argc, &argv);  // CIFAR_FUZZ_WRITE_SEEDS=DIR writes the seeds and exits
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PATH... (input files or folders of them)\n", argv[0]);
    return 2;
  }
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    for (const std::string& file : input_files(argv[i])) {
      if (!replay(file)) return 1;
      ++count;
    }
  }
  std::fprintf(stderr, "replay: %zu input(s), none failed\n", count);
  return count > 0 ? 0 : 1;
}
