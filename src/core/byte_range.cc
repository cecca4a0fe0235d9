#include "core/byte_range.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace dataflux::internal {

std::optional<std::string> read_range_header(std::uint64_t offset,
                                             std::optional<std::uint64_t> length,
                                             std::uint64_t delivered) {
  std::uint64_t first = offset + delivered;
  if (!length) {
    if (first == 0) return std::nullopt;
    return absl::StrCat("bytes=", first, "-");
  }
  return absl::StrCat("bytes=", first, "-", offset + *length - 1);
}

std::optional<std::uint64_t> parse_decimal_u64(std::string_view text) {
  std::uint64_t v = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())),
                        &v)) {
    return std::nullopt;
  }
  return v;
}

std::optional<std::uint64_t> total_from_content_range(std::string_view value) {
  auto slash = value.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  return parse_decimal_u64(value.substr(slash + 1));
}

}  // namespace dataflux::internal
