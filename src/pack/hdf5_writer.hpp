// The writer of the packed CIFAR-10 HDF5 file (schema in
// data/cifar_schema.hpp, the reader in data/hdf5_dataset.hpp), used by
// cifar_pack.
#pragma once

#include <string>

#include "data/cifar_data.hpp"

namespace cifar {

struct H5WriteOptions {
  int gzip_level = 0;  // 0: no compression; 1..9: deflate before the Fletcher32 checksum
};

// Writes `data` as one HDF5 file at `path`, atomically (temporary name in the
// same folder, fsync, rename). Computes and stores per-split counts, class
// counts and per-channel mean/std. Throws DataError/LibraryError.
void write_cifar_h5(const std::string& path, const CifarData& data, const H5WriteOptions& options = {});

}  // namespace cifar
