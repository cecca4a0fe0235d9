// What the record datasets (ShardDataset, LineDataset) share above the torch-free stream:
// the epoch, the position, the counts that make a resume cheap, the stream itself, and the
// archive format of save()/load(). Used under the dataset's mutex.
#ifndef DATAFLUX_SRC_DATA_RECORD_CURSOR_H_
#define DATAFLUX_SRC_DATA_RECORD_CURSOR_H_

#include <ATen/ops/tensor.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataflux/crc32c.h"
#include "dataflux/error.h"
#include "dataflux/fetch.h"
#include "dataflux/open_store.h"
#include "shards/listing.h"
#include "shards/order.h"
#include "shards/record_stream.h"

namespace dataflux::internal {

// What a record dataset's options say about its sources, order and read-ahead.
struct RecordSourceOptions {
  std::string kind;  // "ShardDataset", for messages
  std::string unit;  // "shards", "objects": what ranks split
  std::vector<std::string> urls;
  bool shards_only = true;
  std::shared_ptr<ObjectStore> store;
  StoreOptions store_options;  // with the retry options applied
  int listing_workers = 0;
  int rank = -1;
  int world_size = -1;
  std::uint64_t seed = 0;
  bool shuffle = false;
  std::size_t shuffle_buffer = 0;
  std::size_t sources_in_flight = 4;
  std::uint64_t max_bytes_in_flight = 512ull << 20;
  std::uint64_t range_size = 16ull << 20;
  std::size_t max_requests_in_flight = 64;
};

template <typename R>
struct RecordCursor {
  using Stream = MixedRecordStream<R>;

  // Fixed at construction.
  std::string location;  // for messages
  std::string kind;      // "ShardDataset", for messages
  std::shared_ptr<Fetcher> fetcher;
  std::vector<ObjectEntry> sources;  // every rank's, sorted by name
  std::uint64_t fingerprint = 0;     // of the sources' names and sizes
  std::uint64_t seed = 0;
  bool shuffle = false;
  std::size_t shuffle_buffer = 0;  // used when shuffle
  int rank = 0;
  int world_size = 1;
  PrefetchOptions prefetch;
  FetchAllocator allocate;
  typename Stream::Parse parse;

  mutable std::mutex mu;
  std::uint64_t epoch = 0;            // guarded by mu
  std::uint64_t position = 0;         // records handed out this epoch; guarded by mu
  std::vector<std::uint64_t> counts;  // records per source of this epoch's order; guarded by mu
  std::vector<std::size_t> order;     // this rank's sources this epoch; guarded by mu
  bool fresh = true;                  // the next reset() keeps the position; guarded by mu
  std::unique_ptr<Stream> stream;     // guarded by mu

  // Lists the sources, resolves and checks the partition (every rank needs a source), and
  // sets up the fetcher and read-ahead; `parse` and `allocate` are the caller's. Throws Error.
  // Returns the listing (its store and bucket; its sources moved into `sources`).
  ShardListing open(const RecordSourceOptions& o) {
    ShardListing listing = value_or_throw(
        list_under(o.urls, o.store, o.store_options, o.listing_workers, o.shards_only));
    rank = o.rank;
    world_size = o.world_size;
    throw_if_error(resolve_partition(&rank, &world_size));
    if (listing.shards.size() < static_cast<std::size_t>(world_size)) {
      throw Error(absl::InvalidArgumentError(
          absl::StrCat(o.kind, " ", listing.location, ": ", listing.shards.size(), " ", o.unit,
                       " cannot feed ", world_size, " ranks (each rank reads whole ", o.unit,
                       "); write smaller ", o.unit, " (more of them)")));
    }
    FetchOptions fetch;
    fetch.max_requests_in_flight = o.max_requests_in_flight;
    fetch.max_bytes_in_flight = o.max_bytes_in_flight;
    fetch.range_size = o.range_size;
    fetch.disable_compose = true;  // large objects: parallel ranges, never composites
    location = listing.location;
    kind = o.kind;
    fetcher = std::make_shared<Fetcher>(listing.store, listing.bucket, fetch);
    sources = std::move(listing.shards);
    listing.shards.clear();
    fingerprint = fingerprint_of(sources);
    seed = o.seed;
    shuffle = o.shuffle;
    shuffle_buffer = o.shuffle_buffer;
    prefetch.window_objects = std::max<std::size_t>(1, o.sources_in_flight);
    prefetch.window_bytes = o.max_bytes_in_flight;
    prefetch.chunk_objects = 1;
    return listing;
  }

  // The datasets' public methods, each under the lock.
  void reset_locked() {
    std::lock_guard<std::mutex> lock(mu);
    reset();
  }
  void set_epoch_locked(std::uint64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    start_epoch(e);
    fresh = true;
  }
  void save_locked(torch::serialize::OutputArchive& archive, const char* key) const {
    std::lock_guard<std::mutex> lock(mu);
    save(archive, key);
  }
  void load_locked(torch::serialize::InputArchive& archive, const char* key) {
    std::lock_guard<std::mutex> lock(mu);
    load(archive, key);
  }
  std::uint64_t epoch_locked() const {
    std::lock_guard<std::mutex> lock(mu);
    return epoch;
  }
  std::uint64_t position_locked() const {
    std::lock_guard<std::mutex> lock(mu);
    return position;
  }
  std::vector<std::size_t> order_locked() const {
    std::lock_guard<std::mutex> lock(mu);
    return order;
  }

  static std::uint64_t fingerprint_of(const std::vector<ObjectEntry>& objects) {
    std::uint32_t crc = 0;
    for (const auto& o : objects) {
      crc = crc32c_extend(crc, o.name);
      crc = crc32c_extend(crc, &o.size, sizeof(o.size));
    }
    return (static_cast<std::uint64_t>(objects.size()) << 32) | crc;
  }

  void start_epoch(std::uint64_t e) {
    stream.reset();
    epoch = e;
    position = 0;
    counts.clear();
    order = epoch_order(sources.size(), seed, e, shuffle, rank, world_size);
  }

  void reset() {
    if (fresh) {
      fresh = false;
      // Keep a new or loaded position, unless it is the end of its epoch.
      std::uint64_t total = 0;
      for (std::uint64_t c : counts) total += c;
      if (counts.size() < order.size() || position < total) return;
    }
    start_epoch(epoch + 1);
  }

  // Up to `n` records of this rank's order that `keep` accepts; skipped ones count as handed
  // out. Nothing of a failed call is handed out: the next call starts from the same position.
  std::vector<R> pull(std::size_t n, const std::function<bool(const R&)>& keep) {
    if (!stream) {
      std::vector<ObjectEntry> mine;
      mine.reserve(order.size());
      for (std::size_t i : order) mine.push_back(sources[i]);
      RecordStreamOptions options;
      options.shuffle_buffer = shuffle ? shuffle_buffer : 0;
      options.seed = mix_seed(seed, epoch, rank);
      options.prefetch = prefetch;
      options.allocate = allocate;
      options.location = location;
      stream = std::make_unique<Stream>(fetcher, std::move(mine), std::move(options), parse, counts,
                                        position);
    }
    std::vector<R> out;
    std::uint64_t pulled = 0;
    try {
      while (out.size() < n) {
        auto next = stream->next();
        if (!next.ok()) throw Error(next.status());
        if (!next->has_value()) break;
        ++pulled;
        if (!keep || keep(**next)) out.push_back(std::move(**next));
      }
    } catch (...) {
      if (stream->counts().size() > counts.size()) counts = stream->counts();
      stream.reset();  // rebuilt from (counts, position) by the next call
      throw;
    }
    position += pulled;
    if (stream->counts().size() > counts.size()) counts = stream->counts();
    return out;
  }

  void save(torch::serialize::OutputArchive& archive, const char* key) const {
    std::vector<std::int64_t> values = {1,  // format version
                                        static_cast<std::int64_t>(epoch),
                                        static_cast<std::int64_t>(position),
                                        static_cast<std::int64_t>(seed),
                                        shuffle ? 1 : 0,
                                        rank,
                                        world_size,
                                        static_cast<std::int64_t>(fingerprint),
                                        static_cast<std::int64_t>(shuffle_buffer),
                                        static_cast<std::int64_t>(counts.size())};
    for (std::uint64_t c : counts) values.push_back(static_cast<std::int64_t>(c));
    archive.write(key, at::tensor(values, at::kLong));
  }

  void load(torch::serialize::InputArchive& archive, const char* key) {
    at::Tensor saved;
    archive.read(key, saved);
    if (saved.scalar_type() != at::kLong || saved.dim() != 1 || saved.numel() < 10 ||
        saved[0].item<std::int64_t>() != 1 || saved.numel() != 10 + saved[9].item<std::int64_t>()) {
      throw Error(absl::InvalidArgumentError(
          absl::StrCat("load ", location, ": not a ", kind, " state archive")));
    }
    auto v = saved.accessor<std::int64_t, 1>();
    auto mismatch = [&](const char* what, std::int64_t was, std::int64_t now) {
      if (was == now) return;
      throw Error(absl::FailedPreconditionError(
          absl::StrCat("load ", location, ": the saved state has ", what, " ", was, " but this ",
                       kind, " has ", now,
                       "; resume with the same sources, seed, shuffle, buffer, rank and "
                       "world size")));
    };
    mismatch("seed", v[3], static_cast<std::int64_t>(seed));
    mismatch("shuffle", v[4], shuffle ? 1 : 0);
    mismatch("rank", v[5], rank);
    mismatch("world size", v[6], world_size);
    mismatch("listing fingerprint", v[7], static_cast<std::int64_t>(fingerprint));
    mismatch("shuffle buffer", v[8], static_cast<std::int64_t>(shuffle_buffer));
    start_epoch(static_cast<std::uint64_t>(v[1]));
    position = static_cast<std::uint64_t>(v[2]);
    const auto n = static_cast<std::size_t>(v[9]);
    if (n > order.size()) mismatch("sources read", static_cast<std::int64_t>(n), order.size());
    for (std::size_t i = 0; i < n; ++i) counts.push_back(static_cast<std::uint64_t>(v[10 + i]));
    fresh = true;
  }
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_DATA_RECORD_CURSOR_H_
