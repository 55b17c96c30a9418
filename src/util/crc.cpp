// CRC-32 and CRC-32C, table-driven (see crc32.hpp, crc32c.hpp): one engine,
// two polynomials.
#include "util/crc32.hpp"
#include "util/crc32c.hpp"

#include <array>
#include <cstring>

namespace cifar {
namespace {

// tables[0][b]: the CRC of the single byte b (the classic reflected
// construction); tables[k][b]: of b followed by k zero bytes, so that eight
// bytes are folded in with eight look-ups and no dependency between them.
template <uint32_t kReflectedPolynomial>
struct Crc {
  std::array<std::array<uint32_t, 256>, 8> tables{};

  Crc() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t crc = b;
      for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kReflectedPolynomial : 0u);
      tables[0][b] = crc;
    }
    for (size_t k = 1; k < tables.size(); ++k)
      for (uint32_t b = 0; b < 256; ++b) tables[k][b] = (tables[k - 1][b] >> 8) ^ tables[0][tables[k - 1][b] & 0xFFu];
  }

  // The CRC of the bytes so far (`previous`, 0 for none) followed by these.
  uint32_t operator()(uint32_t previous, const void* data, size_t size) const {
    const auto* p = static_cast<const unsigned char*>(data);
    uint32_t crc = previous ^ 0xFFFFFFFFu;
    for (; size >= 8; p += 8, size -= 8) {
      uint32_t lo;
      uint32_t hi;
      std::memcpy(&lo, p, 4);  // the bytes in order: little-endian loads (x86, ARM)
      std::memcpy(&hi, p + 4, 4);
      if constexpr (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__) {
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
      }
      lo ^= crc;
      crc = tables[7][lo & 0xFFu] ^ tables[6][(lo >> 8) & 0xFFu] ^ tables[5][(lo >> 16) & 0xFFu] ^ tables[4][lo >> 24] ^
            tables[3][hi & 0xFFu] ^ tables[2][(hi >> 8) & 0xFFu] ^ tables[1][(hi >> 16) & 0xFFu] ^ tables[0][hi >> 24];
    }
    for (; size > 0; ++p, --size) crc = tables[0][(crc ^ *p) & 0xFFu] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
  }
};

}  // namespace

uint32_t crc32_update(uint32_t previous, const void* data, size_t size) {
  static const Crc<0xEDB88320u> crc;
  return crc(previous, data, size);
}

uint32_t crc32(const void* data, size_t size) { return crc32_update(0, data, size); }

uint32_t crc32c(const void* data, size_t size) {
  static const Crc<0x82F63B78u> crc;
  return crc(0, data, size);
}

}  // namespace cifar
