// CRC-32 (ISO-HDLC: polynomial 0x04C11DB7, bit-reflected 0xEDB88320), the
// checksum a zip archive keeps of every entry's uncompressed bytes: torch's
// files (checkpoints, model files, optimiser states) are zip archives, and
// their entries' CRC-32s are what proves a file undamaged
// (integrity/torch_archive.hpp); a gzip file's trailer holds one of its
// decompressed bytes (the CIFAR-10 release). Table-driven, eight bytes at a time
// ("slicing-by-8"), so that checking a checkpoint costs little next to
// reading it. Not CRC-32C (util/crc32c.hpp), another polynomial.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cifar {

// crc32("123456789") == 0xCBF43926 (the standard check value).
uint32_t crc32(const void* data, size_t size);
// The CRC-32 of bytes given in pieces: crc32_update(crc32(a), b) == crc32(a + b).
uint32_t crc32_update(uint32_t previous, const void* data, size_t size);
inline uint32_t crc32(std::string_view bytes) { return crc32(bytes.data(), bytes.size()); }

}  // namespace cifar
