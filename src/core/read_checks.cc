#include "core/read_checks.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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

}  // namespace dataflux::internal
