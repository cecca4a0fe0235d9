// Checks every backend makes on the bytes it moves: CRC32C values in messages, and the
// verdict on a completed whole-object read.
//
//   auto s = check_whole_object_crc32c("GET gs://b/o", bytes, received, server, expected);
//   if (!s.ok()) return s;  // DataLoss naming both checksums
#ifndef DATAFLUX_SRC_CORE_READ_CHECKS_H_
#define DATAFLUX_SRC_CORE_READ_CHECKS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dataflux/object_store.h"

namespace dataflux::internal {

// "0x1a2b3c4d (base64)": how messages show a CRC32C, in both forms users meet.
std::string crc32c_text(std::uint32_t crc);

// After a whole object of `bytes` bytes arrived with checksum `received`: DataLoss when it
// differs from the server's or the caller's expected value, naming `context` and both values.
absl::Status check_whole_object_crc32c(const std::string& context, std::uint64_t bytes,
                                       std::uint32_t received, std::optional<std::uint32_t> server,
                                       std::optional<std::uint32_t> expected);

// The CRC32C of a whole object read as consecutive ranges of `range_size` bytes (the last one
// shorter), from the ranges' own CRC32Cs in order.
std::uint32_t crc32c_of_ranges(const std::vector<std::uint32_t>& range_crcs,
                               std::uint64_t range_size, std::uint64_t object_size);

// True when `object` is exactly `size` bytes with CRC32C `crc` (a known checksum, never assumed).
bool has_exactly(const ObjectMetadata& object, std::uint64_t size, std::uint32_t crc);

// A write or compose that must not replace the live object (a precondition) was refused with
// `conflict`: the refusal may answer a re-send (ours, or libcurl's on a dead keep-alive
// connection) whose first copy was applied and its reply lost. The live object when it is
// exactly what was sent, and (if given) not generation `other_than`; logged as such. Otherwise
// nullopt: somebody else's object, or no way to tell.
std::optional<ObjectMetadata> ours_despite_conflict(
    ObjectStore& store, const std::string& bucket, const std::string& object, std::uint64_t size,
    std::uint32_t crc, const absl::Status& conflict,
    std::optional<std::int64_t> other_than = std::nullopt);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_READ_CHECKS_H_
