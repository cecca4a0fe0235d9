// CRC32C (Castagnoli), the checksum GCS keeps for every object and we check on every byte.
//
// Uses the SSE4.2 crc32 instruction when the CPU has it, and a table otherwise.
//
//   std::uint32_t crc = dataflux::crc32c("123456789");           // 0xe3069283
//   std::uint32_t part = dataflux::crc32c(first_half);
//   part = dataflux::crc32c_extend(part, second_half);              // same as over the whole
//   std::string b64 = dataflux::crc32c_to_base64(crc);               // as in x-goog-hash
#ifndef DATAFLUX_CRC32C_H_
#define DATAFLUX_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dataflux {

// Extends `crc` (the CRC32C of earlier bytes, 0 for none) over [data, data + size).
std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size);
inline std::uint32_t crc32c_extend(std::uint32_t crc, std::string_view data) {
  return crc32c_extend(crc, data.data(), data.size());
}
inline std::uint32_t crc32c(std::string_view data) { return crc32c_extend(0, data); }

// CRC32C of A||B from crc(A), crc(B) and |B|, without the bytes (for composed objects).
std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t size_b);

// Big-endian 4 bytes, base64-encoded: the form GCS uses in metadata and x-goog-hash.
std::string crc32c_to_base64(std::uint32_t crc);
std::optional<std::uint32_t> crc32c_from_base64(std::string_view base64);

// True when the hardware path is in use (for benchmarks and logs).
bool crc32c_is_hardware_accelerated();

}  // namespace dataflux

#endif  // DATAFLUX_CRC32C_H_
