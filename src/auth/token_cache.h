// TokenCache: the one process-wide cache of OAuth2 access tokens, shared by every client and
// thread, keyed by credential identity (type, account, endpoint, scopes).
//
// A valid token is returned at once. A token within `refresh_ahead` of expiry is refreshed by
// exactly one caller while the others keep using it; with no valid token, callers wait for the
// one fetch in flight. So thousands of concurrent requests cause one token fetch.
//
//   auto token = internal::TokenCache::instance().get(source, absl::Minutes(5));
//   if (token.ok()) request.headers.emplace_back("Authorization", "Bearer " + token->token);
#ifndef DATAFLUX_SRC_AUTH_TOKEN_CACHE_H_
#define DATAFLUX_SRC_AUTH_TOKEN_CACHE_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dataflux::internal {

struct AccessToken {
  std::string token;
  absl::Time expiry = absl::InfinitePast();
};

// Where tokens come from: a token endpoint (service account, authorized user) or the metadata
// server. fetch() is only ever called by one thread at a time per key.
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // Identifies the credential; holds no secret.
  virtual const std::string& cache_key() const = 0;
  virtual absl::StatusOr<AccessToken> fetch() = 0;
};

class TokenCache {
 public:
  static TokenCache& instance();

  // A token valid now: the cached one, or a fresh one from `source` (see the header comment).
  absl::StatusOr<AccessToken> get(TokenSource& source, absl::Duration refresh_ahead);
  // `rejected` (a token a server refused) is forgotten if it is still the cached one for `key`;
  // a token that has already been replaced is left alone.
  void invalidate(const std::string& key, std::string_view rejected);
  // Forgets the cached token for `key` unless it was fetched less than `min_age` ago or a fetch
  // is in flight (for callers that cannot say which token was rejected).
  void invalidate_older_than(const std::string& key, absl::Duration min_age);
  // Token fetches started per key since process start (for tests and diagnostics).
  std::uint64_t fetch_count(const std::string& key);

 private:
  struct Entry {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<AccessToken> token;
    absl::Time fetched_at = absl::InfinitePast();
    bool fetching = false;
    std::uint64_t generation = 0;  // completed fetches, to wake waiters
    absl::Status last_error;
    std::uint64_t fetches = 0;
  };
  std::shared_ptr<Entry> entry(const std::string& key);

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_AUTH_TOKEN_CACHE_H_
