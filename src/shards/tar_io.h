// Tar shards as WebDataset lays them out, read and written with libarchive (never by hand).
//
// A sample is the group of consecutive members sharing a key: the member's path up to the
// first dot of its file name ("train/cat/001.jpg" -> key "train/cat/001", field "jpg"). The
// field name is the rest, lower-cased, as WebDataset does ("a.seg.png" -> "seg.png"). Members
// without a dot in their file name, and anything that is not a regular file, carry no field
// and are skipped (as WebDataset skips them).
//
//   internal::TarSampleReader reader(data, size, "gs://b/shards/train-000000.tar", allocate);
//   while (auto sample = reader.next()) { ... }  // StatusOr<optional<TarSample>>
#ifndef DATAFLUX_SRC_SHARDS_TAR_IO_H_
#define DATAFLUX_SRC_SHARDS_TAR_IO_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataflux/fetch.h"

struct archive;

namespace dataflux::internal {

// Splits a member path into (key, field) by the rules above; nullopt when it has no field.
std::optional<std::pair<std::string, std::string>> split_member_name(std::string_view path);

// What the writer refuses because a reader would group it differently: an empty key, a key
// whose file name holds a dot, an empty field or one with a '/'.
absl::Status validate_sample_key(std::string_view key);
absl::Status validate_field_name(std::string_view field);

struct TarField {
  std::string name;  // "jpg", "cls", "seg.png"
  // The bytes: either a buffer of their own, or (view_offset set) a view into the shard's
  // memory at that offset, kept alive by the reader's `owner`.
  FetchBuffer buffer;
  std::uint64_t size = 0;
  std::optional<std::uint64_t> view_offset;
};

struct TarSample {
  std::string key;
  std::vector<TarField> fields;  // in the shard's member order

  const TarField* field(std::string_view name) const;
};

// Compression of a shard, from its name: ".tar", ".tar.gz"/".tgz", ".tar.zst"/".tar.zstd".
enum class ShardCompression { kNone, kGzip, kZstd };
std::optional<ShardCompression> shard_compression_from_name(std::string_view name);
std::string_view shard_suffix(ShardCompression compression);  // ".tar", ".tar.gz", ".tar.zst"

// Reads the samples of one shard held in memory (any compression libarchive knows). Errors
// name `what` (the shard's URL) and the member, and say what libarchive said: a truncated or
// corrupt shard is DataLoss, never a short epoch.
class TarSampleReader {
 public:
  // `allocate(size)` returns where a member's bytes go (a tensor's storage, say). With an
  // `owner` that keeps `data` alive, members of a plain tar are views into `data` instead.
  TarSampleReader(const char* data, std::size_t size, std::string what, FetchAllocator allocate,
                  std::shared_ptr<void> owner = nullptr);
  ~TarSampleReader();
  TarSampleReader(const TarSampleReader&) = delete;
  TarSampleReader& operator=(const TarSampleReader&) = delete;

  // The next sample; nullopt after the last. After an error, returns that error.
  absl::StatusOr<std::optional<TarSample>> next();

 private:
  absl::Status open();
  absl::Status error(std::string_view doing) const;

  const char* data_;
  std::size_t size_;
  std::string what_;
  FetchAllocator allocate_;
  std::shared_ptr<void> owner_;
  struct archive* archive_ = nullptr;
  bool opened_ = false;
  bool ended_ = false;
  absl::Status failed_;
  std::optional<TarSample> pending_;  // the sample being grouped
  std::string member_;                // the current member's path, for messages
};

// One tar member as the writer placed it (offsets in the uncompressed stream).
struct TarMemberPlacement {
  std::string name;
  std::uint64_t header_offset = 0;
  std::uint64_t data_offset = 0;
  std::uint64_t size = 0;
};

// Writes a tar stream (pax, readable by GNU tar and Python's tarfile) through `sink`, which
// receives the (possibly compressed) bytes in order and may fail. Not thread-safe.
class TarStreamWriter {
 public:
  using Sink = std::function<absl::Status(const char* data, std::size_t size)>;
  TarStreamWriter(ShardCompression compression, std::string what, Sink sink, std::int64_t mtime);
  ~TarStreamWriter();
  TarStreamWriter(const TarStreamWriter&) = delete;
  TarStreamWriter& operator=(const TarStreamWriter&) = delete;

  // Appends one regular file.
  absl::StatusOr<TarMemberPlacement> add(const std::string& name, const void* data,
                                         std::size_t size);
  // Writes the end of the archive and flushes the compressor.
  absl::Status finish();
  // Bytes handed to the sink so far.
  std::uint64_t bytes_out() const { return bytes_out_; }
  // Bytes of the uncompressed tar stream so far (offsets in placements count these).
  std::uint64_t tar_bytes() const;

 private:
  static long write_callback(struct archive*, void* self, const void* data, std::size_t size);
  absl::Status check(int rc, std::string_view doing);

  std::string what_;
  Sink sink_;
  std::int64_t mtime_;
  struct archive* archive_ = nullptr;
  std::uint64_t bytes_out_ = 0;
  absl::Status sink_status_;
  bool finished_ = false;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_SHARDS_TAR_IO_H_
