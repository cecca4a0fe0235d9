#include "dataflux/open_store.h"

#include <mutex>
#include "absl/strings/str_cat.h"

namespace dataflux {
namespace {

// One GCS store for the default options, so every dataset and checkpoint in a process shares
// its connection pool, and one local store rooted at "/".
absl::StatusOr<std::shared_ptr<ObjectStore>> default_gcs_store() {
  static std::mutex mu;
  static std::shared_ptr<ObjectStore>* store = new std::shared_ptr<ObjectStore>();
  std::lock_guard<std::mutex> lock(mu);
  if (!*store) {
    auto created = make_gcs_store();
    if (!created.ok()) return created.status();
    *store = *std::move(created);
  }
  return *store;
}

}  // namespace

absl::StatusOr<std::shared_ptr<ObjectStore>> open_store(const StorageUrl& url,
                                                        const StoreOptions& options) {
  switch (url.scheme) {
    case Scheme::kGcs: {
      const GcsOptions defaults;
      bool is_default = options.gcs.endpoint.empty() && !options.gcs.credentials &&
                        options.gcs.project.empty() && options.gcs.user_agent_suffix.empty() &&
                        options.gcs.resumable_chunk_size == defaults.resumable_chunk_size;
      if (is_default) return default_gcs_store();
      auto store = make_gcs_store(options.gcs);
      if (!store.ok()) return store.status();
      return std::shared_ptr<ObjectStore>(*std::move(store));
    }
    case Scheme::kFile:
      return make_local_store("/", options.local);
    case Scheme::kS3:
      return absl::UnimplementedError(
          absl::StrCat("cannot open ", url.to_string(), ": the s3:// backend is not built yet"));
  }
  return absl::InvalidArgumentError("unknown URL scheme");
}

absl::StatusOr<std::shared_ptr<ObjectStore>> open_store(std::string_view url,
                                                        const StoreOptions& options) {
  auto parsed = StorageUrl::parse(url);
  if (!parsed.ok()) return parsed.status();
  return open_store(*parsed, options);
}

}  // namespace dataflux
