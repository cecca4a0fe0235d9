// The emulator's data model: buckets of objects with generations, metagenerations,
// preconditions, CRC32C/MD5, compose and copy. No HTTP here; errors are absl::Status with
// the code the HTTP layer turns into GCS's status (see http_status_for()).
#ifndef DATAFLUX_SRC_EMULATOR_STORE_H_
#define DATAFLUX_SRC_EMULATOR_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dataflux::emulator::internal {

// Immutable object bytes. Shared, so a download in progress survives an overwrite or delete,
// and a copy shares its source's bytes.
class Blob {
 public:
  virtual ~Blob() = default;
  virtual std::uint64_t size() const = 0;
  // The bytes when they live in memory (no copy needed to serve them); else nullptr.
  virtual const std::string* memory() const { return nullptr; }
  // Copies [offset, offset + n) into `out`; false on an I/O error.
  virtual bool read(std::uint64_t offset, std::size_t n, char* out) const = 0;
};

// Not-found 404, FailedPrecondition 412, AlreadyExists/Aborted 409, InvalidArgument 400,
// OutOfRange 416, ResourceExhausted 413, Cancelled 499, Unimplemented 501, else 500.
int http_status_for(const absl::Status& status);

struct ObjectRecord {
  std::string bucket;
  std::string name;
  std::int64_t generation = 0;
  std::int64_t metageneration = 1;
  std::string content_type;
  std::string content_encoding;  // "gzip": stored compressed, served as GCS transcodes it
  std::map<std::string, std::string> metadata;
  std::uint32_t crc32c = 0;
  std::string md5_base64;   // empty for composed objects, as on GCS
  int component_count = 0;  // >0 only for composed objects
  std::int64_t created_us = 0;
  std::int64_t updated_us = 0;
  std::shared_ptr<const Blob> blob;
  std::uint64_t size() const { return blob ? blob->size() : 0; }
};

struct BucketRecord {
  std::string name;
  std::string project;
  std::int64_t created_us = 0;
};

// GCS request preconditions (query parameters ifGenerationMatch etc.).
struct Preconditions {
  std::optional<std::int64_t> if_generation_match;
  std::optional<std::int64_t> if_generation_not_match;
  std::optional<std::int64_t> if_metageneration_match;
  std::optional<std::int64_t> if_metageneration_not_match;
};
// FailedPrecondition when `live` (nullptr = no live object) fails `pre`.
absl::Status check_preconditions(const ObjectRecord* live, const Preconditions& pre);

// What a write supplies besides the bytes.
struct NewObject {
  std::string content_type = "application/octet-stream";
  std::string content_encoding;
  std::map<std::string, std::string> metadata;
  std::optional<std::uint32_t> expected_crc32c;  // verified: mismatch → InvalidArgument
  std::string expected_md5_base64;               // verified when not empty
};

struct ListQuery {
  std::string prefix;
  std::string delimiter;
  std::string start_offset;
  std::string end_offset;  // exclusive; empty = none
  std::string page_token;
  std::size_t max_results = 1000;
  bool include_trailing_delimiter = false;
};
struct ListPage {
  std::vector<ObjectRecord> items;
  std::vector<std::string> prefixes;
  std::string next_page_token;  // empty on the last page
};

struct ComposeSource {
  std::string name;
  std::optional<std::int64_t> generation;
  std::optional<std::int64_t> if_generation_match;
};

class Store {
 public:
  // Empty `storage_dir` keeps object bytes in memory; else in files under it.
  explicit Store(std::string storage_dir, std::string default_project);
  // See EmulatorOptions::compute_md5. Call before serving.
  void set_compute_md5(bool on) { compute_md5_ = on; }

  absl::Status create_bucket(const std::string& name, const std::string& project);
  absl::StatusOr<BucketRecord> get_bucket(const std::string& name) const;
  std::vector<BucketRecord> list_buckets(const std::string& project) const;
  absl::Status delete_bucket(const std::string& name);

  absl::StatusOr<ObjectRecord> get(const std::string& bucket, const std::string& name,
                                   std::optional<std::int64_t> generation) const;
  absl::StatusOr<ListPage> list(const std::string& bucket, const ListQuery& query) const;
  std::vector<ObjectRecord> all_objects(const std::string& bucket) const;

  absl::StatusOr<ObjectRecord> insert(const std::string& bucket, const std::string& name,
                                      std::string data, const NewObject& meta,
                                      const Preconditions& pre);
  absl::StatusOr<ObjectRecord> compose(const std::string& bucket, const std::string& destination,
                                       const std::vector<ComposeSource>& sources,
                                       const NewObject& meta, const Preconditions& pre);
  // Copy/rewrite: the destination shares the source bytes. `meta` (when set) replaces the
  // source's content type and metadata.
  absl::StatusOr<ObjectRecord> copy(const std::string& src_bucket, const std::string& src_name,
                                    std::optional<std::int64_t> src_generation,
                                    const std::string& dst_bucket, const std::string& dst_name,
                                    const std::optional<NewObject>& meta, const Preconditions& pre);
  absl::Status remove(const std::string& bucket, const std::string& name,
                      std::optional<std::int64_t> generation, const Preconditions& pre);
  absl::StatusOr<ObjectRecord> patch(
      const std::string& bucket, const std::string& name,
      const std::optional<std::string>& content_type,
      const std::map<std::string, std::optional<std::string>>& metadata, const Preconditions& pre);

  // Bytes → a Blob in memory or in a file under storage_dir.
  absl::StatusOr<std::shared_ptr<const Blob>> make_blob(std::string data);

 private:
  struct Bucket {
    BucketRecord record;
    std::map<std::string, ObjectRecord> objects;  // byte-order, as GCS lists
  };
  std::int64_t next_generation();  // strictly increasing, micros-since-epoch-like
  absl::StatusOr<Bucket*> find_bucket(const std::string& name);
  absl::StatusOr<const Bucket*> find_bucket(const std::string& name) const;
  // Stores `record` as the live generation after `pre` holds (lock held).
  absl::StatusOr<ObjectRecord> commit(Bucket* bucket, ObjectRecord record,
                                      const Preconditions& pre);

  const std::string storage_dir_;
  const std::string default_project_;
  bool compute_md5_ = true;
  mutable std::mutex mu_;
  std::map<std::string, Bucket> buckets_;
  std::int64_t last_generation_ = 0;
  std::uint64_t file_counter_ = 0;
};

}  // namespace dataflux::emulator::internal

#endif  // DATAFLUX_SRC_EMULATOR_STORE_H_
