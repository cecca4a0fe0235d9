#include "dataflux/open_store.h"

#include <map>
#include <mutex>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "http/http_transport.h"
#include "s3/s3_config.h"

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

// One S3 store per resolved endpoint, region and credentials, for options that only name
// those (the common case), so datasets and checkpoints share connections; tests that point
// AWS_ENDPOINT_URL at different emulators get different stores.
absl::StatusOr<std::shared_ptr<ObjectStore>> shared_s3_store(const S3Options& options) {
  const S3Options defaults;
  const bool cacheable = options.user_agent_suffix.empty() &&
                         options.retry.max_attempts == defaults.retry.max_attempts &&
                         options.retry.deadline == defaults.retry.deadline &&
                         internal::same_transport_options(options.transport, defaults.transport);
  if (!cacheable) {
    auto store = make_s3_store(options);
    if (!store.ok()) return store.status();
    return std::shared_ptr<ObjectStore>(*std::move(store));
  }
  auto config = internal::resolve_s3_config(options, internal::process_environment());
  if (!config.ok()) return config.status();
  const auto& c = config->credentials;
  auto key = std::make_tuple(config->endpoint, config->region, static_cast<int>(config->addressing),
                             c.anonymous, c.access_key_id, c.secret_access_key, c.session_token);
  static std::mutex mu;
  static auto* stores = new std::map<decltype(key), std::shared_ptr<ObjectStore>>();
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = (*stores)[key];
  if (!slot) {
    auto store = make_s3_store(options);
    if (!store.ok()) return store.status();
    slot = *std::move(store);
  }
  return slot;
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
    case Scheme::kS3: {
      auto store = shared_s3_store(options.s3);
      if (!store.ok()) {
        return absl::Status(store.status().code(), absl::StrCat("cannot open ", url.to_string(),
                                                                ": ", store.status().message()));
      }
      return store;
    }
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
