// Wire-format helpers for the emulator: URL escaping, Range / Content-Range parsing and
// multipart/related bodies. Pure functions, so each rule is tested without a server.
#ifndef DATAFLUX_SRC_EMULATOR_WIRE_H_
#define DATAFLUX_SRC_EMULATOR_WIRE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/byte_range.h"
#include "core/percent.h"

namespace dataflux::emulator::internal {

// Decodes %XX escapes; nullopt on a malformed escape. '+' stays '+' (paths, not forms).
std::optional<std::string> percent_decode(std::string_view in);
using dataflux::internal::percent_encode;  // core/percent.h

// The raw path of a request target split on '/', each segment percent-decoded.
// "/a/b%2Fc?x" -> {"a", "b/c"}. nullopt on a malformed escape.
std::optional<std::vector<std::string>> split_path(std::string_view target);

// One byte range resolved against an object of `size` bytes: [first, last].
struct ByteRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
};
enum class RangeResult { kNone, kOk, kUnsatisfiable, kMalformed };
// Parses `Range: bytes=a-b | a- | -n` (a single range) against `size`.
RangeResult parse_range(std::string_view header, std::uint64_t size, ByteRange* out);

// `Content-Range` of a resumable upload chunk: the library's one parser.
using ChunkRange = dataflux::internal::ContentRange;
using dataflux::internal::parse_content_range;

// The parts of a multipart/related body. nullopt when the boundary is missing or the body is
// truncated (no closing delimiter).
struct MultipartPart {
  std::string content_type;
  std::string_view body;  // points into the request body
};
std::optional<std::string> multipart_boundary(std::string_view content_type);
std::optional<std::vector<MultipartPart>> parse_multipart(std::string_view body,
                                                          std::string_view boundary);

// `x-goog-hash: crc32c=...,md5=...` values (base64 as sent); empty when absent.
struct GoogHash {
  std::string crc32c;
  std::string md5;
};
GoogHash parse_goog_hash(std::string_view header);

// Whether an Accept-Encoding value accepts gzip ("gzip", "gzip, deflate", "gzip;q=1"; not
// "gzip;q=0", not "identity", not empty).
bool accepts_gzip(std::string_view accept_encoding);
// The decompressed bytes of a gzip stream (several members allowed); nullopt when `data` is not
// valid gzip (zlib).
std::optional<std::string> gunzip(std::string_view data);

// Strict unsigned decimal; nullopt on anything else (sign, spaces, overflow).
std::optional<std::uint64_t> parse_u64(std::string_view s);
std::optional<std::int64_t> parse_i64(std::string_view s);

// RFC 3339 with milliseconds in UTC, as GCS writes timestamps.
std::string rfc3339(std::int64_t micros_since_epoch);

// Base64 of the MD5 digest of `data` (OpenSSL EVP).
std::string md5_base64(std::string_view data);

}  // namespace dataflux::emulator::internal

#endif  // DATAFLUX_SRC_EMULATOR_WIRE_H_
