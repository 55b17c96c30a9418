// CRC-32C (Castagnoli: polynomial 0x1EDC6F41, bit-reflected 0x82F63B78),
// the checksum of TFRecord files (TensorBoard's event files) and of iSCSI,
// ext4 and others. Table-driven, as CRC-32 (util/crc32.hpp, which shares
// its engine).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cifar {

// crc32c("123456789") == 0xE3069283 (the standard check value).
uint32_t crc32c(const void* data, size_t size);
inline uint32_t crc32c(std::string_view bytes) { return crc32c(bytes.data(), bytes.size()); }

}  // namespace cifar
