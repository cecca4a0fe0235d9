#include "emulator/wire.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <array>
#include <climits>
#include <ctime>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/absl_view.h"

namespace dataflux::emulator::internal {

using dataflux::internal::av;
using dataflux::internal::sv;
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(s[i])) !=
        absl::ascii_tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

// Finds the end of the line starting at `pos` (LF or CRLF); returns the position after it.
std::size_t skip_line_end(std::string_view s, std::size_t pos) {
  if (pos < s.size() && s[pos] == '\r') ++pos;
  if (pos < s.size() && s[pos] == '\n') ++pos;
  return pos;
}

// True when the delimiter at `pos` is a whole line: after a line break, and followed by
// "--" (the close) or by optional blanks and a line break.
bool is_delimiter_line(std::string_view body, std::size_t pos, std::size_t size) {
  if (pos == 0 || body[pos - 1] != '\n') return false;
  std::size_t after = pos + size;
  if (body.substr(after, 2) == "--") return true;
  while (after < body.size() && (body[after] == ' ' || body[after] == '\t')) ++after;
  return after < body.size() && (body[after] == '\r' || body[after] == '\n');
}

}  // namespace

std::optional<std::string> percent_decode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return std::nullopt;
    int hi = hex_value(in[i + 1]);
    int lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::optional<std::vector<std::string>> split_path(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  std::vector<std::string> segments;
  std::size_t start = path.empty() || path[0] != '/' ? 0 : 1;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    auto decoded = percent_decode(path.substr(start, end - start));
    if (!decoded) return std::nullopt;
    segments.push_back(std::move(*decoded));
    start = end + 1;
  }
  // A trailing slash leaves one empty segment, which no route wants.
  if (!segments.empty() && segments.back().empty()) segments.pop_back();
  return segments;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    std::uint64_t digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

std::optional<std::int64_t> parse_i64(std::string_view s) {
  bool negative = !s.empty() && s[0] == '-';
  auto magnitude = parse_u64(negative ? s.substr(1) : s);
  if (!magnitude ||
      *magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return std::nullopt;
  }
  auto value = static_cast<std::int64_t>(*magnitude);
  return negative ? -value : value;
}

RangeResult parse_range(std::string_view header, std::uint64_t size, ByteRange* out) {
  header = trim(header);
  if (header.empty()) return RangeResult::kNone;
  if (!starts_with_ci(header, "bytes=")) return RangeResult::kMalformed;
  std::string_view spec = trim(header.substr(6));
  if (spec.find(',') != std::string_view::npos) return RangeResult::kMalformed;
  std::size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return RangeResult::kMalformed;
  std::string_view a = trim(spec.substr(0, dash));
  std::string_view b = trim(spec.substr(dash + 1));
  if (a.empty()) {  // suffix: the last n bytes
    auto n = parse_u64(b);
    if (!n) return RangeResult::kMalformed;
    if (*n == 0 || size == 0) return RangeResult::kUnsatisfiable;
    out->first = *n >= size ? 0 : size - *n;
    out->last = size - 1;
    return RangeResult::kOk;
  }
  auto first = parse_u64(a);
  if (!first) return RangeResult::kMalformed;
  std::optional<std::uint64_t> last;
  if (!b.empty()) {
    last = parse_u64(b);
    if (!last || *last < *first) return RangeResult::kMalformed;
  }
  if (*first >= size) return RangeResult::kUnsatisfiable;
  out->first = *first;
  out->last = last && *last < size ? *last : size - 1;
  return RangeResult::kOk;
}

bool accepts_gzip(std::string_view accept_encoding) {
  for (absl::string_view item : absl::StrSplit(av(accept_encoding), ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(item, ';');
    if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(parts[0]), "gzip")) continue;
    bool refused = false;
    for (std::size_t i = 1; i < parts.size(); ++i) {
      absl::string_view param = absl::StripAsciiWhitespace(parts[i]);
      double q = 1;
      if (absl::ConsumePrefix(&param, "q=") && absl::SimpleAtod(param, &q) && q <= 0) {
        refused = true;
      }
    }
    if (!refused) return true;
  }
  return false;
}

std::optional<std::string> gunzip(std::string_view data) {
  if (data.size() > UINT_MAX) return std::nullopt;
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return std::nullopt;
  std::string out;
  std::array<char, 64 * 1024> chunk;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (true) {
    z.next_out = reinterpret_cast<Bytef*>(chunk.data());
    z.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(chunk.data(), chunk.size() - z.avail_out);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      if (inflateReset(&z) != Z_OK) break;  // another gzip member follows
      continue;
    }
    if (rc != Z_OK) break;
    if (z.avail_in == 0 && z.avail_out != 0) break;  // truncated
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || z.avail_in != 0) return std::nullopt;
  return out;
}

std::optional<std::string> multipart_boundary(std::string_view content_type) {
  std::size_t pos = 0;
  while (pos < content_type.size()) {
    std::size_t semi = content_type.find(';', pos);
    if (semi == std::string_view::npos) semi = content_type.size();
    std::string_view param = trim(content_type.substr(pos, semi - pos));
    if (starts_with_ci(param, "boundary=")) {
      std::string_view value = param.substr(9);
      // Python's email package (gcloud) quotes with single quotes.
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
          value.back() == value.front()) {
        value = value.substr(1, value.size() - 2);
      }
      if (value.empty() || value.size() > 200) return std::nullopt;
      return std::string(value);
    }
    pos = semi + 1;
  }
  return std::nullopt;
}

std::optional<std::vector<MultipartPart>> parse_multipart(std::string_view body,
                                                          std::string_view boundary) {
  const std::string delimiter = "--" + std::string(boundary);
  std::size_t pos = body.find(delimiter);
  if (pos == std::string_view::npos) return std::nullopt;
  std::vector<MultipartPart> parts;
  while (true) {
    pos += delimiter.size();
    if (body.substr(pos, 2) == "--") return parts;  // closing delimiter
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    std::size_t after = skip_line_end(body, pos);
    if (after == pos) return std::nullopt;  // a delimiter must end its line
    pos = after;
    MultipartPart part;
    // Part headers, one per line, up to an empty line.
    while (true) {
      std::size_t eol = body.find('\n', pos);
      if (eol == std::string_view::npos) return std::nullopt;
      std::string_view line = trim(body.substr(pos, eol - pos));
      pos = eol + 1;
      if (line.empty()) break;
      if (starts_with_ci(line, "content-type:")) part.content_type = trim(line.substr(13));
    }
    // The content ends at the line break before the next delimiter.
    std::size_t next = body.find(delimiter, pos);
    while (next != std::string_view::npos && !is_delimiter_line(body, next, delimiter.size())) {
      next = body.find(delimiter, next + 1);
    }
    if (next == std::string_view::npos) return std::nullopt;
    std::size_t end = next - 1;
    if (end > pos && body[end - 1] == '\r') --end;
    if (end < pos) end = pos;
    part.body = body.substr(pos, end - pos);
    parts.push_back(std::move(part));
    pos = next;
  }
}

GoogHash parse_goog_hash(std::string_view header) {
  GoogHash out;
  std::size_t pos = 0;
  while (pos <= header.size()) {
    std::size_t comma = header.find(',', pos);
    if (comma == std::string_view::npos) comma = header.size();
    std::string_view item = trim(header.substr(pos, comma - pos));
    if (starts_with_ci(item, "crc32c=")) out.crc32c = std::string(item.substr(7));
    if (starts_with_ci(item, "md5=")) out.md5 = std::string(item.substr(4));
    pos = comma + 1;
  }
  return out;
}

std::string rfc3339(std::int64_t micros_since_epoch) {
  std::time_t seconds = static_cast<std::time_t>(micros_since_epoch / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                         static_cast<int>((micros_since_epoch / 1000) % 1000));
}

std::string md5_base64(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_md5(), nullptr) != 1) return {};
  return absl::Base64Escape(
      absl::string_view(reinterpret_cast<const char*>(digest), static_cast<std::size_t>(length)));
}

}  // namespace dataflux::emulator::internal
