#include "shards/tar_io.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/absl_view.h"

namespace dataflux::internal {

std::optional<std::pair<std::string, std::string>> split_member_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  const std::size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  const std::size_t dot = path.find('.', base);
  if (dot == std::string_view::npos || dot == base || dot + 1 == path.size()) return std::nullopt;
  return std::make_pair(std::string(path.substr(0, dot)),
                        absl::AsciiStrToLower(av(path.substr(dot + 1))));
}

absl::Status validate_sample_key(std::string_view key) {
  if (key.empty()) return absl::InvalidArgumentError("a sample key must not be empty");
  const std::size_t slash = key.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? key : key.substr(slash + 1);
  if (base.empty() || base.find('.') != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sample key \"", av(key),
        "\" cannot be read back: its file name must be non-empty and hold no '.' (readers split "
        "member names at the first dot of the file name)"));
  }
  return absl::OkStatus();
}

absl::Status validate_field_name(std::string_view field) {
  if (field.empty() || field.find('/') != std::string_view::npos || field.front() == '.' ||
      field.back() == '.') {
    return absl::InvalidArgumentError(
        absl::StrCat("field \"", av(field),
                     "\" is not a valid extension (non-empty, no '/', no leading or "
                     "trailing '.')"));
  }
  if (field != absl::AsciiStrToLower(av(field))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field \"", av(field), "\" must be lower case: readers lower-case extensions"));
  }
  return absl::OkStatus();
}

const TarField* TarSample::field(std::string_view name) const {
  for (const auto& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::optional<ShardCompression> shard_compression_from_name(std::string_view name) {
  if (absl::EndsWith(av(name), ".tar")) return ShardCompression::kNone;
  if (absl::EndsWith(av(name), ".tar.gz") || absl::EndsWith(av(name), ".tgz")) {
    return ShardCompression::kGzip;
  }
  if (absl::EndsWith(av(name), ".tar.zst") || absl::EndsWith(av(name), ".tar.zstd")) {
    return ShardCompression::kZstd;
  }
  return std::nullopt;
}

std::string_view shard_suffix(ShardCompression compression) {
  switch (compression) {
    case ShardCompression::kGzip:
      return ".tar.gz";
    case ShardCompression::kZstd:
      return ".tar.zst";
    case ShardCompression::kNone:
      break;
  }
  return ".tar";
}

// ---- reading ---------------------------------------------------------------------------------

TarSampleReader::TarSampleReader(const char* data, std::size_t size, std::string what,
                                 FetchAllocator allocate, std::shared_ptr<void> owner)
    : data_(data),
      size_(size),
      what_(std::move(what)),
      allocate_(std::move(allocate)),
      owner_(std::move(owner)) {}

TarSampleReader::~TarSampleReader() {
  if (archive_ != nullptr) archive_read_free(archive_);
}

absl::Status TarSampleReader::error(std::string_view doing) const {
  const char* said = archive_ != nullptr ? archive_error_string(archive_) : nullptr;
  return absl::DataLossError(absl::StrCat(
      what_, ": ", av(doing), member_.empty() ? "" : absl::StrCat(" (member \"", member_, "\")"),
      ": ", said != nullptr ? said : "not a tar archive"));
}

absl::Status TarSampleReader::open() {
  opened_ = true;
  archive_ = archive_read_new();
  if (archive_ == nullptr) return absl::ResourceExhaustedError("archive_read_new failed");
  archive_read_support_filter_all(archive_);
  archive_read_support_format_tar(archive_);
  if (size_ == 0) {
    ended_ = true;  // an empty object is an empty shard
    return absl::OkStatus();
  }
  if (archive_read_open_memory(archive_, data_, size_) != ARCHIVE_OK) return error("open");
  return absl::OkStatus();
}

absl::StatusOr<std::optional<TarSample>> TarSampleReader::next() {
  if (!failed_.ok()) return failed_;
  if (!opened_) {
    if (absl::Status s = open(); !s.ok()) return failed_ = s;
  }
  // libarchive cannot peek at the next header, so a sample ends when a member with another
  // key arrives; that member, already read, starts the next sample.
  while (!ended_) {
    struct archive_entry* entry = nullptr;
    const int rc = archive_read_next_header(archive_, &entry);
    if (rc == ARCHIVE_EOF) {
      ended_ = true;
      break;
    }
    // ARCHIVE_RETRY is a damaged header (a bad checksum): libarchive could skip to the next
    // good one, but that would drop a sample silently.
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      failed_ = error(member_.empty() ? "read the first header" : "read the header after");
      return failed_;
    }
    const char* path = archive_entry_pathname(entry);
    member_ = path != nullptr ? path : "";
    if (archive_entry_filetype(entry) != AE_IFREG) continue;
    auto split = split_member_name(member_);
    if (!split) continue;
    if (!archive_entry_size_is_set(entry) || archive_entry_size(entry) < 0) {
      failed_ = error("read the size of");
      return failed_;
    }
    TarField out;
    out.name = std::move(split->second);
    out.size = static_cast<std::uint64_t>(archive_entry_size(entry));
    // Blocks, not archive_read_data: for a plain tar in memory libarchive hands out pointers
    // into the shard itself, so a member that arrives whole in place becomes a view of the
    // shard's buffer (no copy, no allocation); anything else (compressed, split) is copied.
    std::uint64_t got = 0;
    bool allocated = false;
    while (true) {
      const void* block = nullptr;
      std::size_t length = 0;
      la_int64_t offset = 0;
      const int brc = archive_read_data_block(archive_, &block, &length, &offset);
      if (brc == ARCHIVE_EOF) break;
      if (brc != ARCHIVE_OK && brc != ARCHIVE_WARN) {
        failed_ = error("read the data of");
        return failed_;
      }
      const auto at = static_cast<std::uint64_t>(offset);
      if (at > out.size || length > out.size - at) {
        failed_ = error("read past the end of");
        return failed_;
      }
      const char* p = static_cast<const char*>(block);
      if (!allocated && got == 0 && at == 0 && length == out.size && owner_ && p >= data_ &&
          p + length <= data_ + size_) {
        out.buffer = FetchBuffer{const_cast<char*>(p), owner_};
        out.view_offset = static_cast<std::uint64_t>(p - data_);
        got = length;
        continue;
      }
      if (!allocated) {
        if (out.view_offset) {  // a view, then more blocks: copy after all
          const FetchBuffer view = out.buffer;
          out.buffer = allocate_(out.size);
          std::memcpy(out.buffer.data, view.data, got);
          out.view_offset.reset();
        } else {
          out.buffer = allocate_(out.size);
        }
        allocated = true;
      }
      if (at > got) std::memset(out.buffer.data + got, 0, at - got);  // a sparse hole
      if (length > 0) std::memcpy(out.buffer.data + at, p, length);
      got = std::max(got, at + length);
    }
    if (got < out.size && !allocated && !out.view_offset) {
      out.buffer = allocate_(out.size);  // an empty member, or one cut short (refused below)
    }
    if (got != out.size) {
      failed_ = absl::DataLossError(absl::StrCat(
          what_, ": member \"", member_, "\" is truncated: ", got, " of ", out.size, " bytes"));
      return failed_;
    }
    std::optional<TarSample> done;
    if (pending_ && pending_->key != split->first) {
      done = std::move(pending_);
      pending_.reset();
    }
    if (!pending_) {
      pending_.emplace();
      pending_->key = std::move(split->first);
    }
    if (pending_->field(out.name) != nullptr) {
      failed_ =
          absl::DataLossError(absl::StrCat(what_, ": sample \"", pending_->key, "\" has field \"",
                                           out.name, "\" twice (member \"", member_, "\")"));
      return failed_;
    }
    pending_->fields.push_back(std::move(out));
    if (done) return done;
  }
  if (pending_) {
    std::optional<TarSample> done = std::move(pending_);
    pending_.reset();
    return done;
  }
  return std::optional<TarSample>();
}

// ---- writing ---------------------------------------------------------------------------------

TarStreamWriter::TarStreamWriter(ShardCompression compression, std::string what, Sink sink,
                                 std::int64_t mtime)
    : what_(std::move(what)), sink_(std::move(sink)), mtime_(mtime) {
  archive_ = archive_write_new();
  if (archive_ == nullptr) {
    sink_status_ = absl::ResourceExhaustedError("archive_write_new failed");
    return;
  }
  // pax: any name length, read by GNU tar, Python's tarfile and WebDataset alike; ustar
  // headers wherever the name fits, so plain readers see plain members.
  archive_write_set_format_pax_restricted(archive_);
  // No blocking: every header and data write reaches the sink at once, so offsets are exact
  // and the stream ends right after the end-of-archive blocks.
  archive_write_set_bytes_per_block(archive_, 0);
  if (compression == ShardCompression::kGzip) archive_write_add_filter_gzip(archive_);
  if (compression == ShardCompression::kZstd) archive_write_add_filter_zstd(archive_);
  if (archive_write_open2(archive_, this, nullptr, &TarStreamWriter::write_callback, nullptr,
                          nullptr) != ARCHIVE_OK) {
    sink_status_ = absl::InternalError(
        absl::StrCat(what_, ": cannot start a tar stream: ", archive_error_string(archive_)));
  }
}

TarStreamWriter::~TarStreamWriter() {
  if (archive_ != nullptr) archive_write_free(archive_);  // no close: nothing more is sent
}

long TarStreamWriter::write_callback(struct archive* a, void* self, const void* data,
                                     std::size_t size) {
  auto* w = static_cast<TarStreamWriter*>(self);
  if (!w->sink_status_.ok()) return -1;
  absl::Status s = w->sink_(static_cast<const char*>(data), size);
  if (!s.ok()) {
    w->sink_status_ = std::move(s);
    archive_set_error(a, EIO, "the sink failed");
    return -1;
  }
  w->bytes_out_ += size;
  return static_cast<long>(size);
}

absl::Status TarStreamWriter::check(int rc, std::string_view doing) {
  if (!sink_status_.ok()) return sink_status_;
  if (rc >= ARCHIVE_WARN) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what_, ": ", av(doing), ": ", archive_error_string(archive_)));
}

std::uint64_t TarStreamWriter::tar_bytes() const {
  // Filter 0 is the format's own output, before any compressor.
  return archive_ == nullptr ? 0 : static_cast<std::uint64_t>(archive_filter_bytes(archive_, 0));
}

absl::StatusOr<TarMemberPlacement> TarStreamWriter::add(const std::string& name, const void* data,
                                                        std::size_t size) {
  if (!sink_status_.ok()) return sink_status_;
  if (finished_) return absl::FailedPreconditionError(absl::StrCat(what_, ": already finished"));
  TarMemberPlacement placement;
  placement.name = name;
  placement.size = size;
  placement.header_offset = tar_bytes();
  struct archive_entry* entry = archive_entry_new();
  archive_entry_set_pathname(entry, name.c_str());
  archive_entry_set_size(entry, static_cast<la_int64_t>(size));
  archive_entry_set_filetype(entry, AE_IFREG);
  archive_entry_set_perm(entry, 0444);
  archive_entry_set_mtime(entry, mtime_, 0);
  int rc = archive_write_header(archive_, entry);
  archive_entry_free(entry);
  if (absl::Status s = check(rc, absl::StrCat("write the header of \"", name, "\"")); !s.ok()) {
    return s;
  }
  placement.data_offset = tar_bytes();
  const char* p = static_cast<const char*>(data);
  std::size_t left = size;
  while (left > 0) {
    const la_ssize_t n = archive_write_data(archive_, p, left);
    if (n <= 0) {
      absl::Status s = check(ARCHIVE_FATAL, absl::StrCat("write the data of \"", name, "\""));
      return s;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (absl::Status s =
          check(archive_write_finish_entry(archive_), absl::StrCat("finish \"", name, "\""));
      !s.ok()) {
    return s;
  }
  return placement;
}

absl::Status TarStreamWriter::finish() {
  if (finished_) return sink_status_;
  finished_ = true;
  return check(archive_write_close(archive_), "finish the archive");
}

}  // namespace dataflux::internal
