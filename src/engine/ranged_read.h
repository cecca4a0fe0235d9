// Parallel ranged read of one whole object into one caller-provided buffer, verified against
// the object's CRC32C: stat, then the Fetcher's ranges (the one ranged reader), R ranges of S
// bytes in flight, all pinned to the generation the stat saw, each checksummed where it lands
// and combined once the last is in.
//
//   internal::RangedReadOptions options;            // 16 MiB ranges, 16 in flight
//   std::unique_ptr<char[]> bytes;
//   auto result = internal::read_object_ranged(*store, "b", "ckpt.pt", options,
//       [&](std::uint64_t size) { bytes.reset(new char[size]); return bytes.get(); });
//   if (!result.ok()) ...  // DataLoss when the bytes do not match the object's CRC32C
#ifndef DATAFLUX_SRC_ENGINE_RANGED_READ_H_
#define DATAFLUX_SRC_ENGINE_RANGED_READ_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "dataflux/object_store.h"

namespace dataflux::internal {

struct RangedReadOptions {
  std::uint64_t range_size = 16ull << 20;  // bytes per ranged GET
  int max_requests_in_flight = 16;         // ranged GETs in flight
  // A store that reports no CRC32C (some S3 objects) cannot be verified; true makes that an
  // error instead of a read with crc32c_verified = false.
  bool require_crc32c = false;
};

struct RangedReadResult {
  ObjectMetadata metadata;  // from the stat; the generation every range was pinned to
  std::uint64_t bytes = 0;
  int requests = 0;  // reads issued (ranges, or 1 for a single read); store retries not counted
  bool crc32c_verified = false;
};

// `allocate(size)` is called once, with the object's size, and returns where the bytes go
// (capacity >= size; may be nullptr for size 0).
absl::StatusOr<RangedReadResult> read_object_ranged(
    ObjectStore& store, const std::string& bucket, const std::string& object,
    const RangedReadOptions& options, const std::function<char*(std::uint64_t size)>& allocate);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_ENGINE_RANGED_READ_H_
