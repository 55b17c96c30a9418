// Temporary folders and small synthetic HDF5 files for the data tests.
#include "test_files.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "data/packed_header.hpp"
#include "util/paths.hpp"

namespace cifar::test {

TempDir::TempDir() : path_(paths::make_temp_directory("cifar_data_test_")) {}

TempDir::~TempDir() { paths::remove_all(path_); }

std::string TempDir::file(const std::string& name) const { return paths::join(path_, name); }

void resize_file(const std::string& path, int64_t size) {
  ASSERT_EQ(::truncate(path.c_str(), size), 0) << path << ": " << std::strerror(errno);
}

int64_t file_size(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path << ": " << std::strerror(errno);
  return st.st_size;
}

std::string write_small_h5(const TempDir& dir, int64_t train_count, int64_t test_count, uint64_t seed) {
  const std::string path = dir.file("small.h5");
  write_cifar_h5(path, make_synthetic_cifar(train_count, test_count, seed));
  return path;
}

void reseal(const std::string& path) { packed_header::seal(path); }

}  // namespace cifar::test
