#include "core/read_checks.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/log.h"
#include "dataflux/crc32c.h"

namespace dataflux::internal {

std::string crc32c_text(std::uint32_t crc) {
  return absl::StrFormat("0x%08x (%s)", crc, crc32c_to_base64(crc));
}

absl::Status check_whole_object_crc32c(const std::string& context, std::uint64_t bytes,
                                       std::uint32_t received, std::optional<std::uint32_t> server,
                                       std::optional<std::uint32_t> expected) {
  if (server && *server != received) {
    return absl::DataLossError(absl::StrCat(context, ": CRC32C mismatch: the server reports ",
                                            crc32c_text(*server), " but the ", bytes,
                                            " bytes received have ", crc32c_text(received)));
  }
  if (expected && *expected != received) {
    return absl::DataLossError(absl::StrCat(context, ": CRC32C mismatch: expected ",
                                            crc32c_text(*expected), " but the ", bytes,
                                            " bytes received have ", crc32c_text(received)));
  }
  return absl::OkStatus();
}

std::uint32_t crc32c_of_ranges(const std::vector<std::uint32_t>& range_crcs,
                               std::uint64_t range_size, std::uint64_t object_size) {
  std::uint32_t crc = 0;
  for (std::size_t i = 0; i < range_crcs.size(); ++i) {
    crc = crc32c_combine(crc, range_crcs[i], std::min(range_size, object_size - i * range_size));
  }
  return crc;
}

bool has_exactly(const ObjectMetadata& object, std::uint64_t size, std::uint32_t crc) {
  return object.size == size && object.crc32c.has_value() && *object.crc32c == crc;
}

std::optional<ObjectMetadata> ours_despite_conflict(ObjectStore& store, const std::string& bucket,
                                                    const std::string& object, std::uint64_t size,
                                                    std::uint32_t crc, const absl::Status& conflict,
                                                    std::optional<std::int64_t> other_than) {
  if (conflict.code() != absl::StatusCode::kFailedPrecondition) return std::nullopt;
  auto live = store.get_object_metadata(bucket, object);
  if (!live.ok() || !has_exactly(*live, size, crc)) return std::nullopt;
  if (other_than && live->generation == *other_than) return std::nullopt;
  log(LogLevel::kInfo, absl::StrCat(conflict.message(),
                                    ": the live object is the one an earlier attempt wrote (its "
                                    "reply was lost)"));
  return *std::move(live);
}

}  // namespace dataflux::internal
