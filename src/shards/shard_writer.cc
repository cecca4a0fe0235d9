// ShardWriter: samples -> tar members -> one Uploader per shard, with an index beside it.
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/absl_view.h"
#include "dataflux/crc32c.h"
#include "dataflux/shards.h"
#include "dataflux/url.h"
#include "shards/tar_io.h"

namespace dataflux {
namespace {

constexpr std::uint64_t kBlock = 512;
// The end of an archive: two zero blocks.
constexpr std::uint64_t kTrailer = 2 * kBlock;

std::uint64_t round_up(std::uint64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

// Tar bytes a sample takes: a header per member (a pax header too when the name is long),
// the data padded to blocks.
std::uint64_t sample_tar_bytes(const std::string& key, const std::vector<ShardField>& fields) {
  std::uint64_t total = 0;
  for (const auto& f : fields) {
    const std::size_t name = key.size() + 1 + f.name.size();
    total += kBlock + (name > 100 ? 3 * kBlock : 0) + round_up(f.bytes.size());
  }
  return total;
}

class ShardWriterImpl : public ShardWriter {
 public:
  ShardWriterImpl(std::shared_ptr<ObjectStore> store, std::string bucket, std::string base,
                  ShardWriterOptions options, internal::ShardCompression compression)
      : store_(std::move(store)),
        bucket_(std::move(bucket)),
        base_(std::move(base)),
        options_(std::move(options)),
        compression_(compression),
        next_number_(options_.first_shard) {}

  ~ShardWriterImpl() override { discard(); }

  absl::Status write(const std::string& key, const std::vector<ShardField>& fields) override {
    if (!failed_.ok()) return failed_;
    if (closed_) return absl::FailedPreconditionError("ShardWriter: write after close()");
    if (absl::Status s = validate(key, fields); !s.ok()) return s;
    const std::uint64_t need = sample_tar_bytes(key, fields);
    if (tar_ && (count_ >= options_.max_count ||
                 (count_ > 0 && tar_->tar_bytes() + need + kTrailer > options_.max_size))) {
      if (absl::Status s = finish_shard(); !s.ok()) return fail(s);
    }
    if (!tar_) {
      if (absl::Status s = start_shard(); !s.ok()) return fail(s);
    }
    ShardIndexEntry entry;
    entry.key = key;
    entry.offset = tar_->tar_bytes();
    sample_crc_ = 0;
    recording_ = true;
    for (const auto& f : fields) {
      auto placed = tar_->add(absl::StrCat(key, ".", f.name), f.bytes.data(), f.bytes.size());
      if (!placed.ok()) return fail(placed.status());
      entry.fields.push_back({f.name, placed->data_offset, placed->size});
    }
    recording_ = false;
    entry.size = tar_->tar_bytes() - entry.offset;
    entry.crc32c = sample_crc_;
    if (index_) index_->samples.push_back(std::move(entry));
    last_key_ = key;
    ++count_;
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<ShardInfo>> close() override {
    if (!failed_.ok()) return failed_;
    if (!closed_ && tar_) {
      if (absl::Status s = finish_shard(); !s.ok()) return fail(s);
    }
    closed_ = true;
    return done_;
  }

  std::vector<ShardInfo> shards() const override { return done_; }

 private:
  absl::Status validate(const std::string& key, const std::vector<ShardField>& fields) const {
    auto named = [&](const absl::Status& s) {
      return absl::InvalidArgumentError(absl::StrCat("ShardWriter ", store_->url(bucket_, base_),
                                                     ": sample \"", key, "\": ", s.message()));
    };
    if (absl::Status s = internal::validate_sample_key(key); !s.ok()) return named(s);
    if (fields.empty()) return named(absl::InvalidArgumentError("a sample needs a field"));
    if (tar_ && count_ > 0 && key == last_key_) {
      return named(absl::InvalidArgumentError(
          "the same key as the sample before it: a reader would merge the two"));
    }
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (absl::Status s = internal::validate_field_name(fields[i].name); !s.ok()) return named(s);
      for (std::size_t j = 0; j < i; ++j) {
        if (fields[j].name == fields[i].name) {
          return named(absl::InvalidArgumentError(
              absl::StrCat("field \"", fields[i].name, "\" appears twice")));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status fail(absl::Status s) {
    failed_ = s;
    discard();
    return s;
  }

  // Abandons the open shard: nothing is published. The Uploader's destructor aborts it within
  // the library's destructor budget (a dead network cannot hold a destructor here); what it
  // could not delete is cleanup's.
  void discard() {
    tar_.reset();
    upload_.reset();
  }

  std::string shard_name(int number) const {
    char digits[32];
    std::snprintf(digits, sizeof(digits), "%06d", number);
    const bool dir = base_.empty() || base_.back() == '/';
    return absl::StrCat(base_, dir ? "" : "-", digits,
                        internal::av(internal::shard_suffix(compression_)));
  }

  absl::Status start_shard() {
    name_ = shard_name(next_number_++);
    auto up = Uploader::create(store_, bucket_, name_, options_.upload);
    if (!up.ok()) return up.status();
    upload_ = std::move(*up);
    count_ = 0;
    index_.reset();
    if (options_.write_index && compression_ == internal::ShardCompression::kNone) {
      index_.emplace();
      index_->shard = name_;
    }
    tar_ = std::make_unique<internal::TarStreamWriter>(
        compression_, store_->url(bucket_, name_),
        [this](const char* data, std::size_t size) {
          if (recording_) sample_crc_ = crc32c_extend(sample_crc_, data, size);
          return upload_->write(data, size);
        },
        options_.mtime);
    return absl::OkStatus();
  }

  absl::Status finish_shard() {
    if (absl::Status s = tar_->finish(); !s.ok()) return s;
    tar_.reset();
    auto meta = upload_->commit();
    upload_.reset();
    if (!meta.ok()) return meta.status();
    ShardInfo info;
    info.url = store_->url(bucket_, name_);
    info.size = meta->size;
    info.samples = count_;
    info.generation = meta->generation;
    info.etag = meta->etag;
    info.crc32c = meta->crc32c;
    if (index_) {
      index_->size = meta->size;
      index_->generation = meta->generation;
      index_->etag = meta->etag;
      index_->crc32c = meta->crc32c;
      const std::string index_name = shard_index_name(name_);
      UploadOptions small = options_.upload;
      small.expected_size.reset();
      small.content_type = "application/json";
      auto up = Uploader::create(store_, bucket_, index_name, small);
      if (!up.ok()) return up.status();
      const std::string json = shard_index_to_json(*index_);
      if (absl::Status s = (*up)->write(json.data(), json.size()); !s.ok()) return s;
      auto index_meta = (*up)->commit();
      if (!index_meta.ok()) return index_meta.status();
      info.index_url = store_->url(bucket_, index_name);
      index_.reset();
    }
    done_.push_back(std::move(info));
    return absl::OkStatus();
  }

  std::shared_ptr<ObjectStore> store_;
  std::string bucket_;
  std::string base_;
  ShardWriterOptions options_;
  internal::ShardCompression compression_;
  int next_number_;

  std::string name_;  // of the open shard
  std::unique_ptr<Uploader> upload_;
  std::unique_ptr<internal::TarStreamWriter> tar_;
  std::optional<ShardIndex> index_;
  std::uint64_t count_ = 0;
  std::string last_key_;
  bool recording_ = false;
  std::uint32_t sample_crc_ = 0;

  std::vector<ShardInfo> done_;
  absl::Status failed_;
  bool closed_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ShardWriter>> ShardWriter::create(const std::string& prefix,
                                                                 ShardWriterOptions options) {
  auto url = StorageUrl::parse(prefix);
  if (!url.ok()) return url.status();
  internal::ShardCompression compression = internal::ShardCompression::kNone;
  if (options.compression == "gz" || options.compression == "gzip") {
    compression = internal::ShardCompression::kGzip;
  } else if (options.compression == "zst" || options.compression == "zstd") {
    compression = internal::ShardCompression::kZstd;
  } else if (!options.compression.empty() && options.compression != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("ShardWriter ", prefix, ": compression \"", options.compression,
                     "\" is not one of \"\" (none), \"gz\" or \"zst\""));
  }
  if (options.max_count == 0 || options.max_size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ShardWriter ", prefix, ": max_size and max_count must be positive"));
  }
  if (options.first_shard < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ShardWriter ", prefix, ": first_shard must not be negative"));
  }
  std::shared_ptr<ObjectStore> store = options.store;
  if (!store) {
    auto opened = open_store(*url, options.store_options);
    if (!opened.ok()) return opened.status();
    store = std::move(*opened);
  }
  return std::unique_ptr<ShardWriter>(new ShardWriterImpl(
      std::move(store), url->bucket, url->object, std::move(options), compression));
}

}  // namespace dataflux
