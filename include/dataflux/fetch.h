// Fetcher: many objects read concurrently, each straight into its final buffer.
//
// A Fetcher keeps reads in flight on the store's asynchronous path (GCS: the libcurl-multi
// transport, many requests on few threads) within a requests-in-flight and a bytes-in-flight
// budget that every caller sharing the Fetcher draws on. Sizes come from the listing, so each
// read lands in a buffer of exactly the right size with no intermediate copy, and is pinned to
// the listed generation and checked against the listed CRC32C. On GCS, small objects can be
// fetched as compose batches (one compose, one read, one delete for up to 32 objects) when that
// pays off; each slice is checked against its listed size and CRC32C, every composite is
// deleted whatever happens, and any failure falls back to direct reads. PrefetchStream keeps
// the next objects of a sequence in flight for a sequential consumer.
//
//   auto store = dataflux::open_store("gs://my-bucket/").value();
//   dataflux::Fetcher fetcher(store, "my-bucket");
//   std::vector<std::string> bytes(objects.size());   // objects: ObjectEntry from a listing
//   std::vector<dataflux::FetchTarget> targets;        // for each i: {objects[i], buffer}
//   absl::Status status = fetcher.fetch(targets);      // blocks; first error, all completed
#ifndef DATAFLUX_FETCH_H_
#define DATAFLUX_FETCH_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataflux/object_store.h"

namespace dataflux {

// Where compose batches put their temporary objects (the Python connector's prefix, so its
// cleanup advice and listing filters keep working). Dataset listings skip it.
inline constexpr char kComposedObjectsPrefix[] = "dataflux-composed-objects/";

struct FetchOptions {
  std::size_t max_requests_in_flight = 64;        // reads and compose batches outstanding at once
  std::uint64_t max_bytes_in_flight = 256 << 20;  // bytes outstanding; a bigger object runs alone
  // Byte cap of one compose batch (never exceeded); 0 turns compose off (the Python default).
  std::uint64_t max_composite_object_size = 100'000'000;
  bool disable_compose = false;  // forces direct reads, e.g. for read-only buckets
  int max_compose_sources = 32;  // per compose request (GCS allows 32)
  // Pay-off: a batch costs three requests in sequence (compose, read, delete) on one stream,
  // so it pays only when it replaces reads that would otherwise wait for a free request slot:
  // the rule composes only in a fetch of more objects than max_requests_in_flight, in batches
  // of at least this many. The datasets' fetches (a batch, a 32-object read-ahead chunk) fit
  // in the default budget, so by default they never compose; force_compose is for buckets
  // where the request rate or count is the limit (429s, per-operation cost).
  std::size_t min_compose_sources = 8;
  // Objects above this are read directly: parallel streams beat one composite stream.
  std::uint64_t max_compose_source_size = 1 << 20;
  bool force_compose = false;  // compose every eligible batch of 2+ (tests and benchmarks)
  // Objects larger than this are read as parallel ranges of this size (each within the
  // budgets above), so one 150 MiB sample is not one 100 MB/s stream; 0 never splits.
  std::uint64_t range_size = 16 << 20;
};

// Counters since the Fetcher was made (for tests, benchmarks and logs).
struct FetchStats {
  std::uint64_t direct_reads = 0;        // objects read directly (whole, or in ranges)
  std::uint64_t ranged_reads = 0;        // range requests for objects above range_size
  std::uint64_t composes = 0;            // composites created
  std::uint64_t composed_objects = 0;    // objects delivered through a composite
  std::uint64_t compose_fallbacks = 0;   // batches read directly after a compose-path failure
  std::uint64_t slice_mismatches = 0;    // slices whose size or CRC32C disagreed with the listing
  std::uint64_t composites_deleted = 0;  // every created composite should end up here...
  std::uint64_t composites_leaked = 0;   // ...or here, when deleting it failed (see cleanup())
};

// One read: the object and a buffer of object.size bytes that stays alive until the fetch
// completes.
struct FetchTarget {
  ObjectEntry object;
  char* buffer = nullptr;
  std::string etag;  // S3: every range is read from this version (ReadObjectRequest::etag)
};

namespace internal {
class FetcherImpl;
}

// Thread-safe; copies of a shared_ptr<Fetcher> share one budget. Destruction waits for every
// outstanding read and deletes every composite.
class Fetcher {
 public:
  Fetcher(std::shared_ptr<ObjectStore> store, std::string bucket, FetchOptions options = {});
  ~Fetcher();
  Fetcher(const Fetcher&) = delete;
  Fetcher& operator=(const Fetcher&) = delete;

  // Starts every read. `on_item(i, status)` runs once per target as it completes, in any
  // order (unordered completion), then `on_done(first error or OK)` once all have. Both run on
  // store threads and must not block for long. Either may be empty.
  void fetch_async(std::vector<FetchTarget> targets,
                   std::function<void(std::size_t index, const absl::Status& status)> on_item,
                   std::function<void(absl::Status status)> on_done);
  // Blocks until every target is read; the first error, naming the object, or OK.
  absl::Status fetch(std::vector<FetchTarget> targets);

  FetchStats stats() const;
  const std::string& bucket() const;
  const std::shared_ptr<ObjectStore>& store() const;

 private:
  std::shared_ptr<internal::FetcherImpl> impl_;
};

// A buffer for a PrefetchStream: `data` holds the object's bytes, `owner` keeps it alive.
struct FetchBuffer {
  char* data = nullptr;
  std::shared_ptr<void> owner;
};
using FetchAllocator = std::function<FetchBuffer(std::uint64_t size)>;

struct PrefetchOptions {
  std::size_t window_objects = 256;           // objects read ahead of the consumer
  std::uint64_t window_bytes = 256ull << 20;  // bytes read ahead (at least one object)
  std::size_t chunk_objects = 32;             // objects per fetch (a compose batch at most)
};

// Reads `objects` in order ahead of a sequential consumer. Not thread-safe (one consumer);
// destruction waits for the reads still in flight.
class PrefetchStream {
 public:
  struct Item {
    std::size_t position = 0;  // index into the sequence
    FetchBuffer buffer;
    std::uint64_t size = 0;
  };

  // `allocate` nullptr = std::vector-like heap buffers.
  PrefetchStream(std::shared_ptr<Fetcher> fetcher, std::vector<ObjectEntry> objects,
                 PrefetchOptions options = {}, FetchAllocator allocate = nullptr);
  ~PrefetchStream();
  PrefetchStream(const PrefetchStream&) = delete;
  PrefetchStream& operator=(const PrefetchStream&) = delete;

  // The next object in sequence order (ordered completion); nullopt after the last. An error
  // names the object; the stream then stays failed.
  absl::StatusOr<std::optional<Item>> next();

 private:
  struct State;
  void refill();
  std::shared_ptr<Fetcher> fetcher_;
  std::vector<ObjectEntry> objects_;
  PrefetchOptions options_;
  FetchAllocator allocate_;
  std::shared_ptr<State> state_;
};

struct CleanupOptions {
  // Only temporaries at least this old: a running job's compose batches live for seconds and
  // its checkpoint parts for the length of a save, so the default (an hour) keeps cleanup from
  // racing a job that is running. 0 deletes every temporary at once (nothing may be running).
  std::chrono::seconds min_age{3600};
  // Only objects under this prefix (compose temporaries live at the bucket root, under
  // kComposedObjectsPrefix, so a prefix like "ckpt/" leaves them alone).
  std::string prefix;
  bool composed_objects = true;  // compose temporaries: everything under kComposedObjectsPrefix
  bool upload_parts = true;      // checkpoint parts: names containing ".dataflux-part-"
  // Uploads started under the prefix and never finished (S3 multipart uploads of a crashed
  // save: invisible to listings, billed until aborted): aborted.
  bool pending_uploads = true;
  bool dry_run = false;  // report what would be deleted, delete nothing
  // Called for every object deleted (or, on a dry run, that would be).
  std::function<void(const ObjectMetadata&)> on_delete;
  // Called for every unfinished upload aborted (or, on a dry run, that would be).
  std::function<void(const PendingUpload&)> on_abort;
};

// Deletes the temporary objects a crashed job can leave behind in `bucket`: compose batches
// (kComposedObjectsPrefix) and the Uploader's checkpoint parts ("<object>.dataflux-part-...",
// see upload.h), and aborts the uploads it started and never finished (S3 multipart). Returns
// how many objects and uploads it removed (on a dry run: would remove); objects that vanish
// meanwhile are not counted. The first failure names the object. `dataflux cleanup URL` is
// this function on the command line.
absl::StatusOr<std::size_t> cleanup(ObjectStore& store, const std::string& bucket,
                                    CleanupOptions options = {});

}  // namespace dataflux

#endif  // DATAFLUX_FETCH_H_
