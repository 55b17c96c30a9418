// Fuzz harness: the validating HDF5 reader (PackedFile: its checksum header, metadata and splits).
//
// Input: the bytes of a packed .h5 file, written to the scratch folder. The
// contract under test (data/hdf5_dataset.hpp): every failure is one DataError
// naming the file; any other exception, crash or sanitizer report is a bug.
#include <string>

#include "data/hdf5_dataset.hpp"
#include "fuzz_support.hpp"
#include "pack/hdf5_writer.hpp"
#include "pack/synthetic.hpp"
#include "util/error.hpp"

namespace cifar::fuzz {

void write_seeds(const std::string& dir) {
  // As `cifar_pack --synthetic 16 --test-count 8 --seed 1`, and smaller ones
  // with and without deflate.
  write_cifar_h5(dir + "/synthetic-16-8.h5", make_synthetic_cifar(16, 8, 1));
  write_cifar_h5(dir + "/synthetic-2-1.h5", make_synthetic_cifar(2, 1, 2));
  H5WriteOptions gzip;
  gzip.gzip_level = 9;
  write_cifar_h5(dir + "/synthetic-2-1-gzip.h5", make_synthetic_cifar(2, 1, 3), gzip);
}

}  // namespace cifar::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = cifar::fuzz::write_scratch_file("fuzz.h5", data, size);
  try {
    // What training reads: both whole splits from one PackedFile, and a shard as a hyperslab.
    const cifar::PackedFile file(path);
    const cifar::DatasetInfo& info = file.info();
    const cifar::Split train = file.split("train");
    const cifar::Split test = file.split("test");
    if (train.size() != info.split("train").count || test.size() != info.split("test").count) __builtin_trap();
    if (train.size() >= 2) file.split("train", 1, 1);
  } catch (const cifar::DataError&) {
    // The documented failure: one message naming the file.
  }
  return 0;
}
