// Tar shards in the WebDataset conventions: write them (ShardWriter, pack_objects) and find
// them (list_shards, read_shard_index). Torch-free; the datasets that train from shards are in
// dataflux/shard_dataset.h.
//
// A shard is a tar file (optionally .tar.gz or .tar.zst) of samples; a sample is the group of
// consecutive members sharing a key ("cat/001.jpg" and "cat/001.cls" are sample "cat/001" with
// fields "jpg" and "cls"). Beside each uncompressed shard the writer puts an index,
// SHARD.index.json: every sample's key, byte range and CRC32C, and its fields' offsets, so a
// sample can be read with one ranged GET (ShardMapDataset).
//
//   auto writer = dataflux::ShardWriter::create("gs://b/shards/train").value();
//   writer->write("cat/001", {{"jpg", jpeg_bytes}, {"cls", "3"}});   // as often as needed
//   auto shards = writer->close();   // gs://b/shards/train-000000.tar, -000001.tar, ...
#ifndef DATAFLUX_SHARDS_H_
#define DATAFLUX_SHARDS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dataflux/object_store.h"
#include "dataflux/open_store.h"
#include "dataflux/upload.h"

namespace dataflux {

struct ShardWriterOptions {
  // A shard is closed before a sample would take it past max_size bytes (a single larger
  // sample gets a shard of its own) or once it holds max_count samples; the defaults are
  // WebDataset's and cortx_pytorch's (1e8 bytes, 100,000 samples).
  std::uint64_t max_size = 100'000'000;
  std::uint64_t max_count = 100'000;
  // "" (plain tar: indexed, so ShardMapDataset can read single samples), "gz" or "zst".
  std::string compression;
  // Write SHARD.index.json beside every uncompressed shard.
  bool write_index = true;
  // The first shard's number: PREFIX-000000.tar, then 000001... (6 digits, more if needed).
  int first_shard = 0;
  // Members' modification time (seconds since the epoch); the default makes shards of the
  // same samples byte-identical, whenever they are written.
  std::int64_t mtime = 0;
  // Each shard is one upload: parts in parallel, published atomically under its final name.
  UploadOptions upload;
  std::shared_ptr<ObjectStore> store;  // nullptr = open_store(prefix URL, store_options)
  StoreOptions store_options;
};

// One field of a sample: its extension ("jpg", "cls", "seg.png") and bytes.
struct ShardField {
  std::string name;
  std::string_view bytes;
};

struct ShardInfo {
  std::string url;        // gs://b/shards/train-000000.tar
  std::string index_url;  // gs://b/shards/train-000000.tar.index.json, or "" when none
  std::uint64_t size = 0;
  std::uint64_t samples = 0;
  std::int64_t generation = 0;
  std::string etag;  // S3
  std::optional<std::uint32_t> crc32c;
};

// Streams samples into shards: one Uploader per shard (bounded memory: part buffers only),
// a new shard at max_size/max_count. write() is called from one thread at a time.
class ShardWriter {
 public:
  // `prefix`: "gs://b/shards/train" -> gs://b/shards/train-000000.tar, ...
  static absl::StatusOr<std::unique_ptr<ShardWriter>> create(const std::string& prefix,
                                                             ShardWriterOptions options = {});
  virtual ~ShardWriter() = default;  // abandons the open shard unless close() was called

  // Appends a sample. InvalidArgument when a reader would not get it back as written: an
  // empty key, a '.' in the key's file name, the key of the sample just written, a field
  // name that is empty, not lower case or repeated. After a failure of the store, keeps
  // returning that failure.
  virtual absl::Status write(const std::string& key, const std::vector<ShardField>& fields) = 0;
  // Publishes the last shard and returns every shard written, in order.
  virtual absl::StatusOr<std::vector<ShardInfo>> close() = 0;
  // Shards published so far.
  virtual std::vector<ShardInfo> shards() const = 0;
};

// One sample in an index: its byte range [offset, offset + size) in the shard (from its first
// header to the end of its last member's data), that range's CRC32C, and each field's data.
struct ShardIndexEntry {
  struct Field {
    std::string name;
    std::uint64_t offset = 0;  // of the data, in the shard
    std::uint64_t size = 0;
  };
  std::string key;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t crc32c = 0;
  std::vector<Field> fields;
};

struct ShardIndex {
  std::string shard;  // the shard's object name, as written
  std::uint64_t size = 0;
  std::int64_t generation = 0;  // of the shard it describes (0 = unknown)
  std::string etag;             // S3: of the shard it describes
  std::optional<std::uint32_t> crc32c;
  std::vector<ShardIndexEntry> samples;
};

std::string shard_index_to_json(const ShardIndex& index);
// `what` names the index in errors (its URL).
absl::StatusOr<ShardIndex> shard_index_from_json(std::string_view json, const std::string& what);
// The index object's name for a shard: "train-000000.tar" -> "train-000000.tar.index.json".
std::string shard_index_name(std::string_view shard_name);

// Every shard (.tar, .tar.gz, .tgz, .tar.zst) under each of `urls` (prefixes of one bucket,
// as S3FileLister takes several), sorted by name and without duplicates. NotFound when there
// is none, naming the URLs.
struct ShardListing {
  std::shared_ptr<ObjectStore> store;
  std::string bucket;
  std::string location;  // for messages: the URL, or the first of several
  std::vector<ObjectEntry> shards;
  // Each shard's SHARD.index.json where the listing holds one (same order as `shards`).
  std::vector<std::optional<ObjectEntry>> indexes;
};
absl::StatusOr<ShardListing> list_shards(const std::vector<std::string>& urls,
                                         std::shared_ptr<ObjectStore> store = nullptr,
                                         const StoreOptions& store_options = {},
                                         int listing_workers = 0);

// pack_objects: every object under `source` (a directory of class/xxx.jpg as ImageFolder lays
// it out) into shards at `dest_prefix`. A sample per object: key = its path under the source
// without the extension, field = its extension (lower case), plus "cls" = the index of its
// folder among the sorted folder names, as ImageFolder's class_to_idx (a decimal number, as
// WebDataset's "cls" files hold it).
struct PackOptions {
  ShardWriterOptions writer;
  // Samples go into the shards in a random order fixed by `seed` (the default), so every
  // shard holds a mix of classes: a shuffle buffer cannot mix shards that each hold one class.
  bool shuffle = true;
  std::uint64_t seed = 0;
  // Add "cls" from the first folder level; objects outside any folder are then an error.
  bool labels_from_folders = true;
  // Objects read ahead of the writer (concurrently, within the byte budget).
  std::size_t read_ahead_objects = 256;
  std::uint64_t read_ahead_bytes = 256ull << 20;
  std::shared_ptr<ObjectStore> source_store;  // nullptr = open_store(source, store_options)
  StoreOptions store_options;
  // Called after each sample with (samples done, samples in all, bytes done).
  std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)> progress;
};

struct PackResult {
  std::vector<ShardInfo> shards;
  std::uint64_t samples = 0;
  std::uint64_t bytes = 0;           // of the samples' data
  std::vector<std::string> classes;  // the folder names, index = label
};

absl::StatusOr<PackResult> pack_objects(const std::string& source, const std::string& dest_prefix,
                                        PackOptions options = {});

}  // namespace dataflux

#endif  // DATAFLUX_SHARDS_H_
