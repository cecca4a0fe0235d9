// ObjectStore: the one interface every storage backend implements.
//
// Datasets, checkpoints and the engine talk to an ObjectStore chosen from a URL's scheme
// (see open_store.h), never to a backend directly, so every feature works on GCS, on S3 and
// on the local filesystem. Backend-specific speedups (compose, resumable sessions) sit behind
// capabilities(). Every method is thread-safe; errors are absl::Status values whose message
// names the operation, bucket, object and (for HTTP backends) the HTTP status.
//
//   auto store = dataflux::open_store("gs://my-bucket/train/").value();
//   dataflux::ListObjectsRequest list;
//   list.bucket = "my-bucket";
//   list.prefix = "train/";
//   auto page = store->list_objects(list);                       // one page of up to 1000
//   std::string bytes(page->objects[0].size, '\0');
//   store->read_object({"my-bucket", page->objects[0].name}, bytes.data(), bytes.size());
#ifndef DATAFLUX_OBJECT_STORE_H_
#define DATAFLUX_OBJECT_STORE_H_

#include <chrono>
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

namespace dataflux {

// What a store knows about one object. Fields a backend cannot provide keep their defaults.
struct ObjectMetadata {
  std::string bucket;
  std::string name;
  std::uint64_t size = 0;
  std::int64_t generation = 0;      // changes on every overwrite; 0 when unknown
  std::int64_t metageneration = 0;  // changes on metadata updates
  std::optional<std::uint32_t> crc32c;
  std::string md5_hash;  // base64, as GCS reports it; empty when unknown
  // S3: the ETag as the server sent it (quotes included), which reads pin to with If-Match.
  // Empty on gs:// and file://, whose reads pin to the generation.
  std::string etag;
  std::string storage_class;
  std::string content_type;
  std::chrono::system_clock::time_point updated{};
};

// One object as a listing gives it and a read needs it: the part of ObjectMetadata that datasets
// keep for every object. The second object type exists for memory: a dataset of millions of
// objects holds one per object (56 bytes with a name of up to 15 characters, against
// ObjectMetadata's 200). A Listing stores them column by column and hands them out by value.
struct ObjectEntry {
  std::string name;
  std::uint64_t size = 0;
  std::int64_t generation = 0;          // reads are pinned to it; 0 = unknown (not pinned)
  std::optional<std::uint32_t> crc32c;  // checked on every read when known

  ObjectEntry() = default;
  ObjectEntry(std::string name, std::uint64_t size, std::int64_t generation = 0,
              std::optional<std::uint32_t> crc32c = std::nullopt)
      : name(std::move(name)), size(size), generation(generation), crc32c(crc32c) {}
  explicit ObjectEntry(const ObjectMetadata& m)
      : name(m.name), size(m.size), generation(m.generation), crc32c(m.crc32c) {}
};

struct ListObjectsRequest {
  std::string bucket;
  std::string prefix;        // only names starting with this
  std::string delimiter;     // e.g. "/": names with it after the prefix roll up into `prefixes`
  std::string start_offset;  // only names >= this (byte order)
  std::string end_offset;    // only names < this; empty = no end
  std::string page_token;    // from a previous page's next_page_token
  int max_results = 1000;    // per page; a backend may cap it (GCS: 1000)
  // Only name, size, generation, CRC32C and storage class are needed (a listing for a
  // dataset): backends that can ask for less (GCS `fields=`) get smaller, faster pages.
  bool lean = false;
};

struct ListObjectsPage {
  std::vector<ObjectMetadata> objects;  // sorted by name, byte order
  std::vector<std::string> prefixes;    // with a delimiter: the rolled-up "directories"
  std::string next_page_token;          // empty on the last page
};

struct ReadObjectRequest {
  std::string bucket;
  std::string object;
  std::uint64_t offset = 0;                // first byte to read
  std::optional<std::uint64_t> length;     // bytes to read; nullopt = to the end
  std::optional<std::int64_t> generation;  // read exactly this generation (pins across resumes)
  // S3 only: read exactly the version with this ETag (If-Match), e.g. the one a HEAD saw; a
  // different live version fails the read with FailedPrecondition. Empty: the first response's
  // ETag pins the read's own resumes.
  std::string etag;
  // For whole-object reads: the CRC32C the caller expects (e.g. from a listing). It is checked
  // in addition to the checksum the server reports; a mismatch is absl::DataLossError.
  std::optional<std::uint32_t> expected_crc32c;
  bool verify_crc32c = true;  // whole-object reads are verified unless this is false
};

struct ReadObjectResult {
  std::uint64_t bytes = 0;              // bytes delivered
  std::uint64_t object_size = 0;        // size of the whole object
  std::int64_t generation = 0;          // generation that was read
  std::optional<std::uint32_t> crc32c;  // the whole object's CRC32C as the server reports it
  bool crc32c_verified = false;         // true when the bytes were checked against a CRC32C
  int attempts = 1;                     // requests it took, including resumes after failures
};

// Receives the bytes of a streaming read in order. Returning an error stops the read and
// makes ReadObject return that error.
using ByteSink = std::function<absl::Status(const char* data, std::size_t size)>;

struct WriteObjectRequest {
  std::string bucket;
  std::string object;
  std::string content_type = "application/octet-stream";
  // Write only if the live object has this generation; 0 = only if the object does not exist.
  std::optional<std::int64_t> if_generation_match;
  // CRC32C of the whole content, if the caller already knows it; otherwise it is computed.
  // The stored object's checksum is compared with it and a mismatch fails the write.
  std::optional<std::uint32_t> crc32c;
};

// An upload that can be interrupted and resumed (GCS resumable upload, or its local
// equivalent). write() buffers up to one chunk and sends whole chunks; finish() sends the rest
// and commits. Destroying a session without finish() leaves no object behind.
class WriteSession {
 public:
  virtual ~WriteSession() = default;
  // Identifies the session so resume_resumable_write() can continue it after a crash.
  virtual const std::string& session_id() const = 0;
  // Bytes the server has durably received.
  virtual std::uint64_t persisted_size() const = 0;
  virtual absl::Status write(std::string_view data) = 0;
  virtual absl::StatusOr<ObjectMetadata> finish() = 0;
  // Abandons the upload; the object is not created.
  virtual absl::Status cancel() = 0;
};

// One object uploaded as numbered parts, concurrently and in any order, then published
// atomically: the object appears only when complete() succeeds; abort(), or destruction
// without complete(), leaves neither the object nor any part behind. Backends with a native
// form (S3 multipart upload) say so in capabilities().multipart_upload; elsewhere the engine's
// uploader builds the same thing from temporary objects and compose.
class MultipartUpload {
 public:
  virtual ~MultipartUpload() = default;
  // Uploads part `number`, 1 <= number <= capabilities().max_parts. Thread-safe: several
  // parts may be in flight at once. Every part but the last has at least
  // capabilities().min_part_size bytes. Uploading a number again replaces that part. The
  // part's checksum is checked against what the server stored.
  virtual absl::Status upload_part(int number, std::string_view data) = 0;
  // Publishes parts 1..N in order; fails if any part in 1..N is missing.
  virtual absl::StatusOr<ObjectMetadata> complete() = 0;
  // Abandons the upload and deletes its parts.
  virtual absl::Status abort() = 0;
};

struct ComposeSource {
  std::string name;
  std::optional<std::int64_t> generation;  // compose exactly this generation (ifGenerationMatch)
};

struct ComposeObjectRequest {
  std::string bucket;
  std::string destination;
  std::vector<ComposeSource> sources;               // at most capabilities().max_compose_sources
  std::optional<std::int64_t> if_generation_match;  // on the destination; 0 = must not exist
  std::string content_type = "application/octet-stream";
};

struct CopyObjectRequest {
  std::string source_bucket;
  std::string source_object;
  std::optional<std::int64_t> source_generation;
  std::string destination_bucket;
  std::string destination_object;
  std::optional<std::int64_t> if_generation_match;  // on the destination; 0 = must not exist
};

struct DeleteObjectRequest {
  std::string bucket;
  std::string object;
  std::optional<std::int64_t> if_generation_match;  // delete only this generation
};

// An upload a writer started and never completed or aborted (an S3 multipart upload): not an
// object, invisible to listings, yet holding storage until someone aborts it.
struct PendingUpload {
  std::string object;  // the name it would have been published under
  std::string id;      // the store's handle for it (kept out of messages: a capability)
  std::chrono::system_clock::time_point started{};
};

struct StoreCapabilities {
  bool compose = false;            // ComposeObject is supported
  int max_compose_sources = 0;     // per ComposeObject request (GCS: 32)
  bool resumable_writes = false;   // StartResumableWrite is supported
  bool server_end_offset = false;  // the server honours ListObjectsRequest::end_offset itself
  bool generations = false;        // generations and generation preconditions are real
  std::uint64_t write_chunk_quantum = 1;  // resumable chunk sizes are multiples of this
  bool multipart_upload = false;          // start_multipart_upload is supported natively
  std::uint64_t min_part_size = 0;        // every multipart part but the last (S3: 5 MiB)
  int max_parts = 0;                      // multipart parts per upload (S3: 10,000)
  // Requests cross a network, so batching small reads into a composite and uploading in
  // parallel parts pay off; false for a local disk, where either is only a second copy.
  bool remote = true;
};

// Called with the result of an asynchronous operation, on a thread owned by the store.
// It must not block for long: hand heavy work to another thread.
template <typename T>
using AsyncCallback = std::function<void(absl::StatusOr<T>)>;

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // "gcs", "local", ... for messages and metrics; decisions ask capabilities() instead.
  virtual std::string_view backend() const = 0;
  virtual StoreCapabilities capabilities() const = 0;
  // How messages and listings name an object of this store: "gs://bucket/object",
  // "s3://bucket/key", "file:///root/object"; with an empty object, the bucket's own URL
  // ("gs://bucket", "file:///root"). Each backend's one URL formatter.
  virtual std::string url(std::string_view bucket, std::string_view object) const = 0;

  virtual absl::StatusOr<ListObjectsPage> list_objects(const ListObjectsRequest& request) = 0;
  virtual absl::StatusOr<ObjectMetadata> get_object_metadata(const std::string& bucket,
                                                             const std::string& object) = 0;

  // Reads [offset, offset + n) into `buffer`, where n = request.length or, if unset, the rest
  // of the object. Fails with InvalidArgument when n > capacity (never writing past
  // `capacity`), and with OutOfRange when offset is past the end. Interrupted transfers
  // resume where they stopped. Bytes land directly in `buffer`.
  virtual absl::StatusOr<ReadObjectResult> read_object(const ReadObjectRequest& request,
                                                       char* buffer, std::size_t capacity) = 0;
  // Streams the range to `sink`. A resumed transfer never repeats bytes already delivered.
  virtual absl::StatusOr<ReadObjectResult> read_object(const ReadObjectRequest& request,
                                                       const ByteSink& sink) = 0;
  // Asynchronous ReadObject into a buffer the caller keeps alive until `done` runs. Backends
  // on the HTTP transport keep many of these in flight on few threads; the default runs the
  // synchronous call on the library's pool for blocking work.
  virtual void read_object_async(const ReadObjectRequest& request, char* buffer,
                                 std::size_t capacity, AsyncCallback<ReadObjectResult> done);

  // Writes a whole object in one request.
  virtual absl::StatusOr<ObjectMetadata> write_object(const WriteObjectRequest& request,
                                                      std::string_view data) = 0;
  virtual absl::StatusOr<std::unique_ptr<WriteSession>> start_resumable_write(
      const WriteObjectRequest& request) = 0;
  virtual absl::StatusOr<std::unique_ptr<WriteSession>> resume_resumable_write(
      const WriteObjectRequest& request, const std::string& session_id) = 0;

  // Only where capabilities().multipart_upload; the default answers Unimplemented.
  virtual absl::StatusOr<std::unique_ptr<MultipartUpload>> start_multipart_upload(
      const WriteObjectRequest& request);

  // Uploads started under `prefix` and never completed or aborted, for cleanup. The default has
  // none to show (GCS resumable sessions expire by themselves after a week).
  virtual absl::StatusOr<std::vector<PendingUpload>> list_pending_uploads(
      const std::string& bucket, const std::string& prefix);
  virtual absl::Status abort_pending_upload(const std::string& bucket, const PendingUpload& upload);

  virtual absl::StatusOr<ObjectMetadata> compose_object(const ComposeObjectRequest& request) = 0;
  virtual absl::StatusOr<ObjectMetadata> copy_object(const CopyObjectRequest& request) = 0;
  virtual absl::Status delete_object(const DeleteObjectRequest& request) = 0;
};

}  // namespace dataflux

#endif  // DATAFLUX_OBJECT_STORE_H_
