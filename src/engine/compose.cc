// Compose batches: many small objects fetched as one temporary composite.
//
// Fixes the Python connector's flaws (dataflux-spec.md §2, §6): a batch never exceeds its byte
// cap, sources are pinned to their listed generations, every slice is checked against its
// listed size and CRC32C, the composite is deleted on every path, and any failure falls back
// to direct reads instead of returning shifted or missing samples.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "dataflux/crc32c.h"
#include "engine/fetcher_internal.h"

namespace dataflux {
namespace internal {
namespace {

bool refuses_compose(const absl::Status& status) {
  return status.code() == absl::StatusCode::kPermissionDenied ||
         status.code() == absl::StatusCode::kUnimplemented ||
         status.code() == absl::StatusCode::kUnauthenticated;
}

}  // namespace

std::string unique_composite_name() {
  thread_local std::mt19937_64 rng([] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device() ^
           static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }());
  std::uint64_t hi = rng(), lo = rng();
  hi = (hi & ~0xf000ull) | 0x4000ull;                         // version 4
  lo = (lo & 0x3fffffffffffffffull) | 0x8000000000000000ull;  // variant 10
  char text[40];
  std::snprintf(text, sizeof(text), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xffff),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffull));
  return absl::StrCat(kComposedObjectsPrefix, text);
}

bool FetcherImpl::compose_possible() const {
  if (options_.disable_compose || options_.max_composite_object_size == 0) return false;
  if (!capabilities_.compose || capabilities_.max_compose_sources < 2) return false;
  if (!capabilities_.remote) return false;  // on a local disk a composite is only a second copy
  std::lock_guard<std::mutex> lock(mu_);
  return !compose_refused_;
}

std::vector<std::vector<std::size_t>> FetcherImpl::plan_compose_batches(
    const std::vector<FetchTarget>& targets) const {
  std::vector<std::vector<std::size_t>> batches;
  if (!compose_possible()) return batches;
  if (!options_.force_compose && targets.size() <= options_.max_requests_in_flight) {
    return batches;  // every read gets a request slot at once: nothing to save
  }
  const std::size_t max_sources = static_cast<std::size_t>(
      std::min({options_.max_compose_sources, capabilities_.max_compose_sources, 32}));
  const std::size_t min_sources =
      options_.force_compose ? 2 : std::max<std::size_t>(2, options_.min_compose_sources);
  const std::uint64_t cap = options_.max_composite_object_size;
  std::vector<std::size_t> batch;
  std::uint64_t batch_bytes = 0;
  auto close = [&] {
    if (batch.size() >= min_sources) batches.push_back(std::move(batch));
    batch.clear();
    batch_bytes = 0;
  };
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const std::uint64_t size = targets[i].object.size;
    // Empty objects need no read at all; large ones stream better on their own.
    if (size == 0 || size > options_.max_compose_source_size || size > cap) continue;
    if (batch.size() == max_sources || batch_bytes + size > cap) close();
    batch.push_back(i);
    batch_bytes += size;
  }
  close();
  return batches;
}

void FetcherImpl::compose_batch(const std::shared_ptr<FetchGroup>& group,
                                std::vector<std::size_t> items) {
  std::uint64_t bytes = 0;
  for (std::size_t i : items) bytes += group->targets()[i].object.size;
  Job job;
  job.bytes = bytes;
  job.start = [self = shared_from_this(), group, items = std::move(items), bytes] {
    // A batch blocks on three requests: the blocking pool, never the CPU pool that store reads
    // may need while a batch waits on them.
    ThreadPool::blocking().run([self, group, items, bytes] {
      // Fall-back reads are queued before this job releases its slot, so wait_idle() never
      // sees a moment with nothing outstanding while work remains.
      std::vector<std::size_t> direct;
      try {
        direct = self->run_compose(group, items);
      } catch (...) {  // a store that throws: the batch is read object by object instead
        log(LogLevel::kWarning, absl::StrCat("compose batch: ", thrown_by_store().message()));
        direct = items;
      }
      for (std::size_t i : direct) self->read_direct(group, i);
      self->release(bytes);
    });
  };
  enqueue(std::move(job));
}

std::vector<std::size_t> FetcherImpl::run_compose(const std::shared_ptr<FetchGroup>& group,
                                                  const std::vector<std::size_t>& items) {
  const auto& targets = group->targets();
  ComposeObjectRequest compose;
  compose.bucket = bucket_;
  compose.destination = unique_composite_name();
  compose.if_generation_match = 0;  // a fresh name: never overwrite anything
  std::uint64_t total = 0;
  for (std::size_t i : items) {
    ComposeSource source;
    source.name = targets[i].object.name;
    if (targets[i].object.generation != 0) source.generation = targets[i].object.generation;
    compose.sources.push_back(std::move(source));
    total += targets[i].object.size;
  }
  auto composite = store_->compose_object(compose);
  if (!composite.ok() && !refuses_compose(composite.status())) {
    // The name is this batch's own: whatever lives there came from a try of this compose whose
    // reply was lost (a 412 to the re-send, or a retry budget spent after it). Of the right
    // size it is used (every slice is still checked against its CRC32C); else it is deleted,
    // never left behind.
    auto live = store_->get_object_metadata(bucket_, compose.destination);
    if (live.ok() && live->size == total) {
      log(LogLevel::kInfo, absl::StrCat(composite.status().message(),
                                        ": the composite is the one an earlier attempt made"));
      composite = *std::move(live);
    } else if (live.ok()) {
      DeleteObjectRequest stray;
      stray.bucket = bucket_;
      stray.object = compose.destination;
      stray.if_generation_match = live->generation;
      (void)store_->delete_object(stray);
    }
  }
  if (!composite.ok()) {
    log(LogLevel::kWarning,
        absl::StrCat("compose of ", items.size(), " objects into ",
                     store_->url(bucket_, compose.destination), " failed (",
                     composite.status().message(), "): reading them one by one"));
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.compose_fallbacks;
    // No permission (a read-only bucket): stop trying; anything else may be transient.
    if (refuses_compose(composite.status())) compose_refused_ = true;
    return items;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.composes;
  }

  // Stream the composite into the final buffers, slice by slice, computing each CRC32C.
  std::size_t slice = 0;
  std::uint64_t offset = 0;  // within the current slice
  std::vector<std::uint32_t> crcs(items.size(), 0);
  auto skip_full = [&] {
    while (slice < items.size() && offset == targets[items[slice]].object.size) {
      ++slice;
      offset = 0;
    }
  };
  ByteSink sink = [&](const char* data, std::size_t n) -> absl::Status {
    while (n > 0) {
      skip_full();
      if (slice == items.size()) {
        return absl::DataLossError(absl::StrCat("composite ", bucket_, "/", compose.destination,
                                                " is longer than its ", total, " listed bytes"));
      }
      const FetchTarget& t = targets[items[slice]];
      const std::size_t take =
          static_cast<std::size_t>(std::min<std::uint64_t>(n, t.object.size - offset));
      std::memcpy(t.buffer + offset, data, take);
      crcs[slice] = crc32c_extend(crcs[slice], data, take);
      offset += take;
      data += take;
      n -= take;
    }
    return absl::OkStatus();
  };
  ReadObjectRequest read;
  read.bucket = bucket_;
  read.object = compose.destination;
  if (composite->generation != 0) read.generation = composite->generation;
  auto result = composite->size == total
                    ? store_->read_object(read, sink)
                    : absl::StatusOr<ReadObjectResult>(absl::DataLossError("size"));
  skip_full();

  DeleteObjectRequest remove;
  remove.bucket = bucket_;
  remove.object = compose.destination;
  if (composite->generation != 0) remove.if_generation_match = composite->generation;
  absl::Status deleted = store_->delete_object(remove);

  const bool complete = result.ok() && slice == items.size();
  std::vector<std::size_t> fallback, delivered;
  for (std::size_t k = 0; complete && k < items.size(); ++k) {
    const auto& expected = targets[items[k]].object.crc32c;
    // A mismatched slice is read directly, which reports the object's own error if any.
    (expected && *expected != crcs[k] ? fallback : delivered).push_back(items[k]);
  }
  if (!deleted.ok() && deleted.code() != absl::StatusCode::kNotFound) {
    log(LogLevel::kWarning, absl::StrCat("temporary composite left behind (dataflux cleanup "
                                         "removes it): ",
                                         deleted.message()));
  }
  if (!complete) {
    log(LogLevel::kWarning,
        absl::StrCat("reading composite ", store_->url(bucket_, compose.destination), " failed (",
                     result.ok() ? "short" : result.status().message(), "): reading its ",
                     items.size(), " objects one by one"));
  } else if (!fallback.empty()) {
    log(LogLevel::kWarning, absl::StrCat(fallback.size(), " slices of composite ",
                                         store_->url(bucket_, compose.destination),
                                         " disagree with their listed CRC32C: read directly"));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++(deleted.ok() || deleted.code() == absl::StatusCode::kNotFound ? stats_.composites_deleted
                                                                     : stats_.composites_leaked);
    if (!complete) ++stats_.compose_fallbacks;
    stats_.slice_mismatches += fallback.size();
    stats_.composed_objects += delivered.size();
  }
  if (!complete) return items;
  for (std::size_t i : delivered) group->item_done(i, absl::OkStatus());
  return fallback;
}

}  // namespace internal

}  // namespace dataflux
