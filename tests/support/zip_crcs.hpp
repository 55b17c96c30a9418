// Tests' and fuzz harnesses' repair of a zip archive's CRC-32s: every stored
// entry's CRC-32 (central directory, and the local header's copy) set to what
// its bytes now give, inner archives (an optimiser state inside a checkpoint)
// first; bytes whose CRC-32 matches are left as they are.
// A file damaged on purpose to test a check behind the CRC-32 check (a pickle
// or zip size, a source line, a tensor past its storage) is repaired this way
// first, as a writer that wrote those bytes would have: it then reaches that
// check. Deflated entries are left as they are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "util/crc32.hpp"

namespace cifar::test {

namespace zip_detail {
inline uint64_t le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
inline void put32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
}  // namespace zip_detail

// Repairs the archive in bytes [data, data + size); returns how many stored
// entries' central-directory CRC-32s (the ones readers compare) did not
// match, inner archives' included; 0 where its directory is not one this walks.
inline int restore_zip_crcs(char* data, size_t size, int depth = 0) {
  using zip_detail::le;
  if (size < 22 || depth > 2) return 0;
  size_t end = size - 22;  // the last end-of-central-directory record
  while (std::memcmp(data + end, "PK\x05\x06", 4) != 0)
    if (end-- == 0 || size - end > 65557) return 0;
  uint64_t files = le(data + end + 10, 2), cdir = le(data + end + 16, 4);
  if ((files == 0xFFFF || cdir == 0xFFFFFFFF) && end >= 20 && std::memcmp(data + end - 20, "PK\x06\x07", 4) == 0) {
    const uint64_t z = le(data + end - 20 + 8, 8);
    if (z + 56 > size) return 0;
    files = le(data + z + 32, 8);
    cdir = le(data + z + 48, 8);
  }
  int mismatches = 0;
  uint64_t p = cdir;
  for (uint64_t i = 0; i < files; ++i) {
    if (p + 46 > size || std::memcmp(data + p, "PK\x01\x02", 4) != 0) return mismatches;
    const char* c = data + p;
    const uint64_t method = le(c + 10, 2), length = le(c + 20, 4);
    const uint64_t name_len = le(c + 28, 2), extra_len = le(c + 30, 2), comment_len = le(c + 32, 2);
    const uint64_t header = le(c + 42, 4);
    if (header + 30 <= size && std::memcmp(data + header, "PK\x03\x04", 4) == 0 && method == 0) {
      const uint64_t at = header + 30 + le(data + header + 26, 2) + le(data + header + 28, 2);
      if (at <= size && length <= size - at) {
        mismatches += restore_zip_crcs(data + at, static_cast<size_t>(length), depth + 1);  // an archive within, first
        const uint32_t crc = crc32(data + at, static_cast<size_t>(length));
        const auto recorded = static_cast<uint32_t>(le(c + 16, 4));
        if (recorded != crc) {
          ++mismatches;
          // The local header's copy too, where the writer put one (it is 0
          // where a data descriptor follows the data, as LibTorch's writer
          // does for some archives).
          if (static_cast<uint32_t>(le(data + header + 14, 4)) == recorded) zip_detail::put32(data + header + 14, crc);
          zip_detail::put32(data + p + 16, crc);
        }
      }
    }
    p += 46 + name_len + extra_len + comment_len;
  }
  return mismatches;
}

inline std::vector<char> with_zip_crcs_restored(std::vector<char> bytes) {
  restore_zip_crcs(bytes.data(), bytes.size());
  return bytes;
}
inline std::string with_zip_crcs_restored(std::string bytes) {
  restore_zip_crcs(&bytes[0], bytes.size());
  return bytes;
}
// How many stored entries' CRC-32s do not match their bytes (restore_zip_crcs).
inline int zip_crc_mismatches(std::vector<char> bytes) { return restore_zip_crcs(bytes.data(), bytes.size()); }

}  // namespace cifar::test
