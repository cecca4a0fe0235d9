// CRC32C with the SSE4.2 crc32 instruction where available and a slicing-by-8 table otherwise.
#include "dataflux/crc32c.h"

#include <array>
#include <cstring>

#include "absl/strings/escaping.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace dataflux {
namespace {

constexpr std::uint32_t kPolynomial = 0x82f63b78;  // Castagnoli, reflected

struct Tables {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t crc = i;
      for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1) ? kPolynomial : 0);
      t[0][i] = crc;
    }
    for (std::uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};
constexpr Tables kTables;

std::uint32_t extend_table(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  crc = ~crc;
  while (n >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    word ^= crc;
    const auto& t = kTables.t;
    crc = t[7][word & 0xff] ^ t[6][(word >> 8) & 0xff] ^ t[5][(word >> 16) & 0xff] ^
          t[4][(word >> 24) & 0xff] ^ t[3][(word >> 32) & 0xff] ^ t[2][(word >> 40) & 0xff] ^
          t[1][(word >> 48) & 0xff] ^ t[0][word >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ kTables.t[0][(crc ^ *p++) & 0xff];
  return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t extend_sse42(std::uint32_t crc,
                                                             const unsigned char* p,
                                                             std::size_t n) {
  std::uint64_t c = ~crc;
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    n -= 8;
  }
  std::uint32_t c32 = static_cast<std::uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}
#endif

bool detect_hardware() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

const bool kHardware = detect_hardware();

// GF(2) matrix helpers for crc32c_combine (zlib's method).
std::uint32_t gf2_times(const std::uint32_t* mat, std::uint32_t vec) {
  std::uint32_t sum = 0;
  for (int i = 0; vec; ++i, vec >>= 1) {
    if (vec & 1) sum ^= mat[i];
  }
  return sum;
}

void gf2_square(std::uint32_t* square, const std::uint32_t* mat) {
  for (int n = 0; n < 32; ++n) square[n] = gf2_times(mat, mat[n]);
}

}  // namespace

std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (kHardware) return extend_sse42(crc, p, size);
#endif
  return extend_table(crc, p, size);
}

std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t size_b) {
  if (size_b == 0) return crc_a;
  std::uint32_t even[32];
  std::uint32_t odd[32];
  odd[0] = kPolynomial;  // the operator for one zero bit
  std::uint32_t row = 1;
  for (int n = 1; n < 32; ++n) {
    odd[n] = row;
    row <<= 1;
  }
  gf2_square(even, odd);  // two zero bits
  gf2_square(odd, even);  // four zero bits
  do {
    gf2_square(even, odd);
    if (size_b & 1) crc_a = gf2_times(even, crc_a);
    size_b >>= 1;
    if (size_b == 0) break;
    gf2_square(odd, even);
    if (size_b & 1) crc_a = gf2_times(odd, crc_a);
    size_b >>= 1;
  } while (size_b != 0);
  return crc_a ^ crc_b;
}

bool crc32c_is_hardware_accelerated() { return kHardware; }

std::string crc32c_to_base64(std::uint32_t crc) {
  const char bytes[4] = {static_cast<char>(crc >> 24), static_cast<char>(crc >> 16),
                         static_cast<char>(crc >> 8), static_cast<char>(crc)};
  return absl::Base64Escape(absl::string_view(bytes, 4));
}

std::optional<std::uint32_t> crc32c_from_base64(std::string_view base64) {
  std::string bytes;
  if (!absl::Base64Unescape(absl::string_view(base64.data(), base64.size()), &bytes) ||
      bytes.size() != 4) {
    return std::nullopt;
  }
  std::uint32_t crc = 0;
  for (unsigned char b : bytes) crc = (crc << 8) | b;
  return crc;
}

}  // namespace dataflux
