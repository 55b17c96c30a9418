// MD5 (RFC 1321), streaming, for the source-archive checksum that cifar_pack
// records and compares with the official release's. Not for security.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace cifar {

class Md5 {
 public:
  Md5();
  void update(const void* data, size_t size);
  std::string hex_digest();  // finishes the hash; 32 lowercase hex digits

 private:
  void transform(const uint8_t block[64]);
  std::array<uint32_t, 4> state_;
  uint64_t length_ = 0;  // bytes hashed so far
  std::array<uint8_t, 64> buffer_{};
};

}  // namespace cifar
