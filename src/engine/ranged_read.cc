#include "engine/ranged_read.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/read_checks.h"
#include "dataflux/fetch.h"

namespace dataflux::internal {

absl::StatusOr<RangedReadResult> read_object_ranged(
    ObjectStore& store, const std::string& bucket, const std::string& object,
    const RangedReadOptions& options, const std::function<char*(std::uint64_t size)>& allocate) {
  const std::string url = store.url(bucket, object);
  auto metadata = store.get_object_metadata(bucket, object);
  if (!metadata.ok()) return metadata.status();
  RangedReadResult result;
  result.metadata = *metadata;
  const std::uint64_t size = metadata->size;
  if (options.require_crc32c && !metadata->crc32c) {
    return absl::FailedPreconditionError(
        absl::StrCat("read ", url, ": the store reports no CRC32C to verify against"));
  }
  char* buffer = allocate(size);
  if (size > 0 && buffer == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("read ", url, ": no buffer for ", size, " bytes"));
  }
  if (size == 0) {
    if (metadata->crc32c && *metadata->crc32c != 0) {
      return absl::DataLossError(absl::StrCat("read ", url, ": empty, but its CRC32C is ",
                                              crc32c_text(*metadata->crc32c)));
    }
    result.crc32c_verified = metadata->crc32c.has_value();
    return result;
  }
  // The Fetcher's ranges (the one ranged reader), within a budget of `max_requests_in_flight`
  // ranges: each pinned to the generation stat saw, checksummed where it lands, combined and
  // checked against the object's CRC32C once the last one is in.
  const std::uint64_t range =
      std::max<std::uint64_t>(1, std::min<std::uint64_t>(options.range_size, size));
  const std::uint64_t window =
      static_cast<std::uint64_t>(std::max(1, options.max_requests_in_flight));
  FetchOptions fetch;
  fetch.disable_compose = true;
  fetch.range_size = range;
  fetch.max_requests_in_flight = static_cast<std::size_t>(window);
  fetch.max_bytes_in_flight = range > UINT64_MAX / window ? UINT64_MAX : range * window;
  FetchTarget target;
  target.object.name = object;
  target.object.size = size;
  target.object.generation = metadata->generation;
  target.etag = metadata->etag;  // S3: If-Match on every range
  target.object.crc32c = metadata->crc32c;
  target.buffer = buffer;
  // Not owned: the Fetcher is gone (every read finished) before this function returns.
  std::shared_ptr<ObjectStore> unowned(&store, [](ObjectStore*) {});
  FetchStats stats;
  absl::Status status;
  {
    Fetcher fetcher(unowned, bucket, fetch);
    status = fetcher.fetch({target});
    stats = fetcher.stats();
  }
  result.requests =
      static_cast<int>(stats.ranged_reads > 0 ? stats.ranged_reads : stats.direct_reads);
  if (!status.ok()) return status;
  result.bytes = size;
  result.crc32c_verified = metadata->crc32c.has_value();
  return result;
}

}  // namespace dataflux::internal
