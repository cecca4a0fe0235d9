#include "dataflux/open_store.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "http/http_transport.h"
#include "s3/s3_config.h"

namespace dataflux {
namespace {

std::int64_t ms(std::chrono::milliseconds d) { return static_cast<std::int64_t>(d.count()); }

std::string retry_key(const RetryOptions& r) {
  return absl::StrCat(r.max_attempts, ",", ms(r.initial_backoff), ",", ms(r.max_backoff), ",",
                      r.multiplier, ",", ms(r.deadline));
}

// Everything in GcsOptions that changes how a store behaves, so two option sets share a store
// only when they would build the same one. The endpoint is resolved as make_gcs_store does
// (an explicit one, else $STORAGE_EMULATOR_HOST), so a changed environment gets a new store.
std::string gcs_store_key(const GcsOptions& o) {
  std::string endpoint = o.endpoint;
  if (endpoint.empty()) {
    const char* host = std::getenv("STORAGE_EMULATOR_HOST");
    endpoint = absl::StrCat("env:", host != nullptr ? host : "");
  }
  const AuthOptions& a = o.auth;
  const TransportOptions& t = o.transport;
  // The credentials object is keyed by address; the cached store holds it, so the address is
  // not reused while the entry lives.
  return absl::StrCat("endpoint=", endpoint,
                      "\ncredentials=", reinterpret_cast<std::uintptr_t>(o.credentials.get()),
                      "\nanonymous=", o.anonymous, "\nauth=", a.credentials_file, "|",
                      a.credentials_json, "|", absl::StrJoin(a.scopes, " "), "|",
                      a.refresh_ahead.count(), "|", retry_key(a.retry), "|", ms(a.metadata_timeout),
                      "\nproject=", o.project, "\nretry=", retry_key(o.retry),
                      "\ntransport=", t.max_requests_in_flight, ",", t.max_bytes_in_flight, ",",
                      t.max_connections_per_host, ",", t.threads, ",", ms(t.connect_timeout), ",",
                      ms(t.stall_timeout), ",", ms(t.request_timeout),
                      "\nresumable_chunk_size=", o.resumable_chunk_size,
                      "\nuser_agent_suffix=", o.user_agent_suffix);
}

// One GCS store per distinct set of options, so every dataset and checkpoint in a process that
// asks for the same options shares its connection pool, and options that differ in any field
// (retries included) get a store that honours them.
absl::StatusOr<std::shared_ptr<ObjectStore>> shared_gcs_store(const GcsOptions& options) {
  static std::mutex mu;
  static auto* stores = new std::map<std::string, std::shared_ptr<ObjectStore>>();
  const std::string key = gcs_store_key(options);
  std::lock_guard<std::mutex> lock(mu);
  auto it = stores->find(key);
  if (it != stores->end()) return it->second;
  auto created = make_gcs_store(options);
  if (!created.ok()) return created.status();
  std::shared_ptr<ObjectStore> store = *std::move(created);
  stores->emplace(key, store);
  return store;
}

// One S3 store per resolved endpoint, region and credentials, for options that only name
// those (the common case), so datasets and checkpoints share connections; tests that point
// AWS_ENDPOINT_URL at different emulators get different stores.
absl::StatusOr<std::shared_ptr<ObjectStore>> shared_s3_store(const S3Options& options) {
  const S3Options defaults;
  const bool cacheable = options.user_agent_suffix.empty() && options.retry == defaults.retry &&
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
    case Scheme::kGcs:
      return shared_gcs_store(options.gcs);
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

StoreOptions with_retry(StoreOptions options, const RetryOptions& retry) {
  const RetryOptions defaults;
  if (retry == defaults) return options;
  if (options.gcs.retry == defaults) options.gcs.retry = retry;
  if (options.s3.retry == defaults) options.s3.retry = retry;
  return options;
}

}  // namespace dataflux
