// Line records: the lines of a text object (optionally gzip- or zstd-compressed), for the
// streaming line dataset. Torch-free.
//
//   auto text = internal::maybe_decompress(data, size, "gs://b/part-0.txt.gz");
//   internal::for_each_line(view, 1 << 20, true, url, [&](std::uint64_t offset, std::size_t n) {});
#ifndef DATAFLUX_SRC_SHARDS_LINES_H_
#define DATAFLUX_SRC_SHARDS_LINES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dataflux::internal {

// True when the bytes start as a gzip or zstd stream does.
bool is_compressed(const char* data, std::size_t size);

// The decompressed bytes of a gzip or zstd stream (libarchive's raw reader); DataLoss naming
// `what` when it is truncated or corrupt.
absl::StatusOr<std::string> decompress(const char* data, std::size_t size, const std::string& what);

// Calls on_line(offset, length) for each line of `text`: the bytes up to '\n' (a '\r' before
// it is dropped; the last line needs no '\n'), empty lines left out when `skip_empty`. A line
// longer than `max_line` bytes is InvalidArgument naming `what` and the line's offset.
absl::Status for_each_line(std::string_view text, std::size_t max_line, bool skip_empty,
                           const std::string& what,
                           const std::function<void(std::uint64_t, std::size_t)>& on_line);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_SHARDS_LINES_H_
