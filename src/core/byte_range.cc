#include "core/byte_range.h"

#include "core/absl_view.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
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
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(av(text)), &v)) {
    return std::nullopt;
  }
  return v;
}

std::optional<ContentRange> parse_content_range(std::string_view value) {
  absl::string_view header = absl::StripAsciiWhitespace(av(value));
  if (header.size() < 6 || !absl::EqualsIgnoreCase(header.substr(0, 5), "bytes") ||
      (header[5] != ' ' && header[5] != '=')) {
    return std::nullopt;
  }
  absl::string_view spec = absl::StripAsciiWhitespace(header.substr(6));
  std::size_t slash = spec.find('/');
  if (slash == absl::string_view::npos) return std::nullopt;
  absl::string_view range = spec.substr(0, slash);
  absl::string_view total = spec.substr(slash + 1);
  auto number = [](absl::string_view text) -> std::optional<std::uint64_t> {
    std::uint64_t v = 0;
    if (text.empty() || !absl::ascii_isdigit(static_cast<unsigned char>(text.front())) ||
        !absl::SimpleAtoi(text, &v)) {
      return std::nullopt;
    }
    return v;
  };
  ContentRange out;
  if (total != "*") {
    out.total = number(total);
    if (!out.total) return std::nullopt;
  }
  if (range != "*") {
    std::size_t dash = range.find('-');
    if (dash == absl::string_view::npos) return std::nullopt;
    out.first = number(range.substr(0, dash));
    out.last = number(range.substr(dash + 1));
    if (!out.first || !out.last || *out.last < *out.first) return std::nullopt;
  }
  return out;
}

std::optional<std::uint64_t> total_from_content_range(std::string_view value) {
  auto parsed = parse_content_range(value);
  if (!parsed) return std::nullopt;
  return parsed->total;
}

}  // namespace dataflux::internal
