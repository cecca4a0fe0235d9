// cleanup(): deletes what a crashed job leaves behind: the temporary objects, both kinds in one
// pass over the listing (compose batches under kComposedObjectsPrefix, checkpoint parts
// "<object>.dataflux-part-..."), then the uploads it started and never finished (S3 multipart).
#include <atomic>
#include <mutex>
#include <vector>

#include "absl/strings/match.h"
#include "core/thread_pool.h"
#include "dataflux/fetch.h"
#include "engine/upload_parts.h"

namespace dataflux {
namespace {

constexpr int kDeleteThreads = 16;

// The narrowest listing prefix that still sees every candidate, or nullopt when nothing under
// `prefix` can be a candidate.
std::optional<std::string> listing_prefix(const CleanupOptions& options) {
  if (options.upload_parts) return options.prefix;  // parts can be anywhere under the prefix
  if (!options.composed_objects) return std::nullopt;
  const std::string composed = kComposedObjectsPrefix;
  if (absl::StartsWith(options.prefix, composed)) return options.prefix;
  if (absl::StartsWith(composed, options.prefix)) return composed;
  return std::nullopt;
}

bool is_candidate(const ObjectMetadata& object, const CleanupOptions& options) {
  if (!absl::StartsWith(object.name, options.prefix)) return false;
  if (options.composed_objects && absl::StartsWith(object.name, kComposedObjectsPrefix)) {
    return true;
  }
  return options.upload_parts && internal::is_upload_part_name(object.name);
}

// Aborts the uploads started under the prefix at least min_age ago and never finished (S3
// multipart uploads of a crashed save), counting them into *done.
absl::Status abort_pending(ObjectStore& store, const std::string& bucket,
                           const CleanupOptions& options,
                           std::chrono::system_clock::time_point cutoff, std::size_t* done) {
  auto pending = store.list_pending_uploads(bucket, options.prefix);
  if (!pending.ok()) return pending.status();
  for (const PendingUpload& upload : *pending) {
    if (upload.started > cutoff) continue;  // a save that may still be running
    if (!options.dry_run) {
      if (absl::Status s = store.abort_pending_upload(bucket, upload); !s.ok()) return s;
    }
    ++*done;
    if (options.on_abort) options.on_abort(upload);
  }
  return absl::OkStatus();
}

// Deletes the temporary objects (compose batches, checkpoint parts) listed under the prefix.
absl::StatusOr<std::size_t> objects_cleanup(ObjectStore& store, const std::string& bucket,
                                            const CleanupOptions& options,
                                            std::chrono::system_clock::time_point cutoff) {
  const auto prefix = listing_prefix(options);
  if (!prefix) return 0;
  std::atomic<std::size_t> deleted{0};
  std::mutex report_mu;  // on_delete is called from several threads, one at a time
  ListObjectsRequest list;
  list.bucket = bucket;
  list.prefix = *prefix;
  do {
    auto page = store.list_objects(list);
    if (!page.ok()) return page.status();
    std::vector<const ObjectMetadata*> doomed;
    for (const auto& object : page->objects) {
      if (!is_candidate(object, options)) continue;
      if (options.min_age.count() > 0 && object.updated > cutoff) continue;
      doomed.push_back(&object);
    }
    absl::Status status = internal::parallel_for(
        internal::ThreadPool::blocking(), static_cast<int>(doomed.size()), kDeleteThreads,
        [&](int i) -> absl::Status {
          const ObjectMetadata& object = *doomed[static_cast<std::size_t>(i)];
          if (!options.dry_run) {
            DeleteObjectRequest remove;
            remove.bucket = bucket;
            remove.object = object.name;
            // Only the generation that was listed: a newer object under the name is not ours.
            if (object.generation != 0) remove.if_generation_match = object.generation;
            absl::Status s = store.delete_object(remove);
            if (s.code() == absl::StatusCode::kNotFound ||
                s.code() == absl::StatusCode::kFailedPrecondition) {
              return absl::OkStatus();  // gone or replaced meanwhile: not ours to count
            }
            if (!s.ok()) return s;
          }
          deleted.fetch_add(1);
          if (options.on_delete) {
            std::lock_guard<std::mutex> lock(report_mu);
            options.on_delete(object);
          }
          return absl::OkStatus();
        });
    if (!status.ok()) return status;
    list.page_token = page->next_page_token;
  } while (!list.page_token.empty());
  return deleted.load();
}

}  // namespace

absl::StatusOr<std::size_t> cleanup(ObjectStore& store, const std::string& bucket,
                                    CleanupOptions options) {
  const auto cutoff = std::chrono::system_clock::now() - options.min_age;
  auto deleted = objects_cleanup(store, bucket, options, cutoff);
  if (!deleted.ok() || !options.pending_uploads) return deleted;
  std::size_t done = *deleted;
  if (absl::Status s = abort_pending(store, bucket, options, cutoff, &done); !s.ok()) return s;
  return done;
}

}  // namespace dataflux
