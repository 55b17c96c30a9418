// Helpers of the data tests: a fresh temporary folder per test and small
// synthetic HDF5 files whose contents are known.
#pragma once

#include <cstdint>
#include <string>

#include "data/hdf5_dataset.hpp"
#include "pack/hdf5_writer.hpp"
#include "pack/synthetic.hpp"

namespace cifar::test {

// A new empty folder under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::string file(const std::string& name) const;

 private:
  std::string path_;
};

// Cuts or extends a file to `size` bytes (truncate(2)); fails the test on error.
void resize_file(const std::string& path, int64_t size);
// A file's size in bytes; fails the test on error.
int64_t file_size(const std::string& path);

// Writes a small synthetic file (train_count / test_count samples) and returns its path.
std::string write_small_h5(const TempDir& dir, int64_t train_count = 300, int64_t test_count = 100, uint64_t seed = 3);

// Writes the checksum header (data/packed_header.hpp) of a packed file again,
// after a test changed the file through HDF5 on purpose: without it the
// reader would refuse the file at its header, before the check under test.
void reseal(const std::string& path);

}  // namespace cifar::test
