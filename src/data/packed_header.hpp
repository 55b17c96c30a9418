// The checksum header of a packed CIFAR-10 file: the first 512 bytes (an HDF5
// user block, which HDF5 and h5py skip), text that says how long the file is
// and the MD5 of every byte after the header:
//
//   cifar_mpi packed CIFAR-10, HDF5 from byte 512\n
//   size 185695736\n
//   md5 2a0cac4e48c547e2241a776d6fa87a71\n
//   (NUL bytes to byte 512)
//
// Why (docs/data.md, docs/dev/fuzzing.md): HDF5 1.10 parses damaged metadata as it
// finds it -- the fuzzer found use-after-free, buffer overflows, a SEGV and
// 4.7 GB allocations inside libhdf5 on damaged files -- and no HDF5 format
// version checksums everything it parses (global heaps, where the strings
// live, never have one; object header prefixes are parsed before their
// checksum is checked). The reader verifies this header before HDF5 sees the
// file, so a damaged file is refused before HDF5 parses any of it.
// `tail -c +513 FILE | md5sum` checks a file by hand.
#pragma once

#include <cstdint>
#include <string>

namespace cifar::packed_header {

inline constexpr uint64_t kBytes = 512;  // a valid HDF5 user block size (a power of 2, >= 512)
inline constexpr const char kMagic[] = "cifar_mpi packed CIFAR-10, HDF5 from byte 512\n";

// Writes the header into the file at `path`, which HDF5 wrote with a user
// block of kBytes (H5Pset_userblock) and has closed. Throws DataError naming
// the file.
void seal(const std::string& path);

struct Check {
  bool has_header = false;  // false: the file does not start with kMagic (not written by this cifar_pack)
  std::string problem;      // with a header: empty when size and MD5 match, else what is wrong
};

// Reads the whole file (a regular file) and checks it against its header.
// Throws DataError naming the file only when it cannot be read.
Check check(const std::string& path);

}  // namespace cifar::packed_header
