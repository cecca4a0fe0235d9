// HTTP byte-range math shared by the HTTP backends (GCS, S3): the Range header a resumed read
// sends, and the object size a Content-Range reveals.
//
//   read_range_header(100, 50, 20);                 // "bytes=120-149"
//   total_from_content_range("bytes 0-9/1234");     // 1234
#ifndef DATAFLUX_SRC_CORE_BYTE_RANGE_H_
#define DATAFLUX_SRC_CORE_BYTE_RANGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dataflux::internal {

// The Range header value for an attempt that has already delivered `delivered` bytes of
// [offset, offset + length): nullopt when the whole object is wanted from the start (no header).
// Requires length, when given, to be > delivered.
std::optional<std::string> read_range_header(std::uint64_t offset,
                                             std::optional<std::uint64_t> length,
                                             std::uint64_t delivered);

// A Content-Range value: "bytes a-b/T", "bytes a-b/*", "bytes */T" or "bytes */*" (absent
// fields are nullopt). The one parser for responses (reads) and requests (resumable chunks).
struct ContentRange {
  std::optional<std::uint64_t> first;
  std::optional<std::uint64_t> last;
  std::optional<std::uint64_t> total;
};
// nullopt when malformed (no "bytes" unit, no '/', last < first, a non-number).
std::optional<ContentRange> parse_content_range(std::string_view value);

// "bytes a-b/T" or "bytes */T" (Content-Range): the total T, when given.
std::optional<std::uint64_t> total_from_content_range(std::string_view value);

// Strict unsigned decimal (surrounding whitespace allowed); nullopt otherwise.
std::optional<std::uint64_t> parse_decimal_u64(std::string_view text);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_BYTE_RANGE_H_
