// Uploader: streams bytes of unknown length into one object with bounded memory, publishing
// it atomically.
//
// Bytes are cut into parts that are uploaded concurrently, at most `max_parts_in_flight` part
// buffers at once, so memory is bounded by max_parts_in_flight x part size whatever the object's
// size. The part size grows as parts accumulate so part counts stay within service limits. The
// object appears only when commit() succeeds; a failure, abort() or destruction without commit
// leaves neither the object nor any temporary part (deletes are retried).
//
//   auto store = dataflux::open_store("gs://b/").value();
//   auto up = dataflux::Uploader::create(store, "b", "ckpt/epoch-3.pt").value();
//   up->write(bytes.data(), bytes.size());              // as often as needed; may block
//   auto meta = up->commit();                           // the object exists only now
//   if (!meta.ok()) std::cerr << meta.status();         // names the failing part and why
//
// How the parts become one object depends on the store:
//   - capabilities().multipart_upload (S3): the native multipart upload.
//   - compose (GCS): each part is a temporary object named
//       <object>.dataflux-part-<16 hex digits>-<part number, 5 digits>
//     (compose-tree intermediates: <object>.dataflux-part-<id>-c<level>-<index>), written with
//     ifGenerationMatch=0 so retries are safe, checked against the server's CRC32C, then
//     composed (a tree when there are more than 32) into the final name under a generation
//     precondition and deleted. Anything matching "*.dataflux-part-*" is a leftover of a crashed
//     upload and safe to delete.
//   - the local filesystem: a single stream into a temporary file renamed into place (one copy
//     of the bytes, already atomic); UploadStrategy::kParts forces the compose form there too.
// A checkpoint smaller than one part is one write_object request.
#ifndef DATAFLUX_UPLOAD_H_
#define DATAFLUX_UPLOAD_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataflux/object_store.h"

namespace dataflux {

enum class UploadStrategy {
  kAuto,          // native multipart, else compose, else (local) single stream; small = 1 request
  kParts,         // parts (native multipart or compose) even on the local store
  kSingleStream,  // one resumable session, sequential (the baseline)
};

struct UploadOptions {
  // Size of the first parts; every `part_size_growth_every` parts it doubles (up to
  // max_part_size), so 10,000 parts hold ~2 PiB starting at 32 MiB. Raised to the store's
  // min_part_size, and to fit `expected_size` in max_parts when that is given.
  std::uint64_t part_size = 32ull << 20;
  std::uint64_t max_part_size = 5ull << 30;  // S3's limit
  int part_size_growth_every = 1000;
  // Part buffers alive at once (the one being filled included): memory <= this x part size.
  int max_parts_in_flight = 8;
  UploadStrategy strategy = UploadStrategy::kAuto;
  std::optional<std::uint64_t> expected_size;  // total bytes, when known in advance
  // Publish only if the live object has this generation (0 = only if it does not exist).
  // Without it the upload replaces whatever is there.
  std::optional<std::int64_t> if_generation_match;
  std::string content_type = "application/octet-stream";
};

struct UploadStats {
  std::uint64_t bytes = 0;                // bytes written
  int parts = 0;                          // parts uploaded (0 for one request or a stream)
  std::uint64_t peak_buffered_bytes = 0;  // most bytes held in part buffers at once
  int peak_parts_in_flight = 0;           // most parts uploading at once
  std::string method;                     // "single-request", "multipart", "compose", "stream"
  int leaked_parts = 0;                   // temporary parts a cleanup could not delete
};

// One object being written. write()/commit()/abort() are called from one thread at a time;
// stats() from any thread at any time. Parts upload on the library's blocking pool, at most
// max_parts_in_flight at once; when every buffer is taken, write() uploads a queued part itself.
class Uploader {
 public:
  static absl::StatusOr<std::unique_ptr<Uploader>> create(std::shared_ptr<ObjectStore> store,
                                                          std::string bucket, std::string object,
                                                          UploadOptions options = {});
  virtual ~Uploader() = default;  // aborts unless committed

  // Appends bytes. Blocks while max_parts_in_flight part buffers are busy. After a failure,
  // returns that failure (and keeps doing so).
  virtual absl::Status write(const void* data, std::size_t size) = 0;
  // Uploads what is left and publishes the object. On failure nothing is published and the
  // temporary parts are gone.
  virtual absl::StatusOr<ObjectMetadata> commit() = 0;
  // Abandons the upload: no object, no parts. Idempotent.
  virtual absl::Status abort() = 0;
  virtual UploadStats stats() const = 0;
  virtual const std::string& url() const = 0;  // "gs://b/o", for messages
};

// The number of parts and part size the Uploader would use for `size` bytes (for tests and
// planning): part n (1-based) has part_size_for(n) bytes except the last.
std::uint64_t upload_part_size(const UploadOptions& options, const StoreCapabilities& caps,
                               int part_number);

}  // namespace dataflux

#endif  // DATAFLUX_UPLOAD_H_
