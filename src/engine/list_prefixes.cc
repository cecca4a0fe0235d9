#include "dataflux/list_prefixes.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "core/thread_pool.h"

namespace dataflux {

absl::StatusOr<std::vector<ObjectMetadata>> list_prefixes(ObjectStore& store,
                                                          const std::string& bucket,
                                                          std::vector<std::string> prefixes,
                                                          const ListOptions& options) {
  if (options.workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("list_prefixes of ", bucket, ": ListOptions::workers must be at least 1"));
  }
  // Sorted, a prefix that starts with a kept one is already covered by it.
  std::sort(prefixes.begin(), prefixes.end());
  std::vector<std::string> kept;
  for (auto& p : prefixes) {
    if (!kept.empty() && p.compare(0, kept.back().size(), kept.back()) == 0) continue;
    kept.push_back(std::move(p));
  }
  // One worker budget for the whole call: `lanes` prefixes at a time, each listed by the fast
  // lister with its share of the workers.
  const int lanes = static_cast<int>(std::min<std::size_t>(kept.size(), options.workers));
  ListOptions each = options;
  each.workers = std::max(1, options.workers / std::max(1, lanes));
  each.progress = nullptr;  // per-prefix counters would interleave; the caller gets none
  std::vector<absl::StatusOr<Listing>> listings(kept.size(), absl::UnknownError("not listed"));
  std::atomic<bool> failed{false};
  (void)internal::parallel_for(internal::ThreadPool::blocking(), static_cast<int>(kept.size()),
                               lanes, [&](int i) {
                                 if (failed.load()) return absl::OkStatus();  // one failed: stop
                                 listings[i] = list_objects_fast(store, bucket, kept[i], each);
                                 if (!listings[i].ok()) failed = true;
                                 return absl::OkStatus();
                               });

  std::vector<ObjectMetadata> out;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (!listings[i].ok()) {
      if (listings[i].status().code() == absl::StatusCode::kUnknown && failed.load()) continue;
      return absl::Status(listings[i].status().code(),
                          absl::StrCat("listing prefix \"", kept[i], "\" of ", bucket, ": ",
                                       listings[i].status().message()));
    }
    // Prefixes do not overlap after the pruning above and each listing is sorted by name, so
    // concatenating them in prefix order keeps the byte order.
    for (const auto& e : *listings[i]) {
      ObjectMetadata m;
      m.bucket = bucket;
      m.name = std::string(e.name);
      m.size = e.size;
      m.generation = e.generation;
      m.crc32c = e.crc32c;
      out.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace dataflux
