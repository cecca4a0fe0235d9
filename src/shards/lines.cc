#include "shards/lines.h"

#include <archive.h>
#include <archive_entry.h>

#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace dataflux::internal {

bool is_compressed(const char* data, std::size_t size) {
  const auto* b = reinterpret_cast<const unsigned char*>(data);
  if (size >= 2 && b[0] == 0x1f && b[1] == 0x8b) return true;                        // gzip
  return size >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd;  // zstd
}

absl::StatusOr<std::string> decompress(const char* data, std::size_t size,
                                       const std::string& what) {
  std::unique_ptr<struct archive, int (*)(struct archive*)> a(archive_read_new(),
                                                              archive_read_free);
  if (!a) return absl::ResourceExhaustedError("archive_read_new failed");
  archive_read_support_filter_all(a.get());
  archive_read_support_format_raw(a.get());
  auto fail = [&](const char* doing) {
    const char* said = archive_error_string(a.get());
    return absl::DataLossError(absl::StrCat(what, ": cannot ", doing, ": ",
                                            said != nullptr ? said : "corrupt compressed data"));
  };
  if (archive_read_open_memory(a.get(), data, size) != ARCHIVE_OK) return fail("open");
  struct archive_entry* entry = nullptr;
  if (archive_read_next_header(a.get(), &entry) != ARCHIVE_OK) return fail("decompress");
  // Blocks straight from libarchive's own buffer: no intermediate copy.
  std::string out;
  while (true) {
    const void* block = nullptr;
    std::size_t length = 0;
    la_int64_t offset = 0;
    const int rc = archive_read_data_block(a.get(), &block, &length, &offset);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) return fail("decompress");
    out.append(static_cast<const char*>(block), length);
  }
  return out;
}

absl::Status for_each_line(std::string_view text, std::size_t max_line, bool skip_empty,
                           const std::string& what,
                           const std::function<void(std::uint64_t, std::size_t)>& on_line) {
  std::size_t start = 0;
  while (start < text.size()) {
    const void* nl = std::memchr(text.data() + start, '\n', text.size() - start);
    const std::size_t end =
        nl == nullptr ? text.size()
                      : static_cast<std::size_t>(static_cast<const char*>(nl) - text.data());
    std::size_t length = end - start;
    if (length > 0 && text[end - 1] == '\r') --length;
    if (length > max_line) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": the line at byte ", start, " is longer than the ", max_line,
                       "-byte cap (max_line_bytes); is this a text file?"));
    }
    if (length > 0 || !skip_empty) on_line(start, length);
    start = end + 1;
  }
  return absl::OkStatus();
}

}  // namespace dataflux::internal
