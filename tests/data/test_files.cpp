// Temporary folders and small synthetic HDF5 files for the data tests.
#include "test_files.hpp"

#include <unistd.h>

#include <atomic>

namespace cifar::test {

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("cifar_data_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string write_small_h5(const TempDir& dir, int64_t train_count, int64_t test_count, uint64_t seed) {
  const std::string path = dir.file("small.h5");
  write_cifar_h5(path, make_synthetic_cifar(train_count, test_count, seed));
  return path;
}

}  // namespace cifar::test
