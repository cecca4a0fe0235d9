#include "auth/token_cache.h"

#include <utility>

namespace dataflux::internal {

TokenCache& TokenCache::instance() {
  static TokenCache* cache = new TokenCache();  // never destroyed: used from any thread at exit
  return *cache;
}

std::shared_ptr<TokenCache::Entry> TokenCache::entry(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& e = entries_[key];
  if (!e) e = std::make_shared<Entry>();
  return e;
}

absl::StatusOr<AccessToken> TokenCache::get(TokenSource& source, absl::Duration refresh_ahead) {
  std::shared_ptr<Entry> e = entry(source.cache_key());
  std::unique_lock<std::mutex> lock(e->mu);
  absl::Time now = absl::Now();
  bool valid = e->token.has_value() && now < e->token->expiry;
  if (valid && (now < e->token->expiry - refresh_ahead || e->fetching)) return *e->token;
  if (!valid && e->fetching) {
    // Someone is fetching and there is nothing valid to use meanwhile: wait for that fetch.
    std::uint64_t seen = e->generation;
    e->cv.wait(lock, [&] { return e->generation != seen; });
    if (e->token.has_value() && absl::Now() < e->token->expiry) return *e->token;
    return e->last_error;
  }
  // This caller fetches; the others use the still-valid token or wait.
  e->fetching = true;
  ++e->fetches;
  lock.unlock();
  absl::StatusOr<AccessToken> fresh = source.fetch();
  lock.lock();
  e->fetching = false;
  ++e->generation;
  if (fresh.ok()) {
    e->token = *fresh;
    e->fetched_at = absl::Now();
    e->last_error = absl::OkStatus();
  } else {
    e->last_error = fresh.status();
  }
  e->cv.notify_all();
  if (fresh.ok()) return fresh;
  // A failed early refresh is not fatal while the old token is still valid.
  if (e->token.has_value() && absl::Now() < e->token->expiry) return *e->token;
  return fresh.status();
}

void TokenCache::invalidate(const std::string& key, std::string_view rejected) {
  std::shared_ptr<Entry> e = entry(key);
  std::lock_guard<std::mutex> lock(e->mu);
  if (e->token.has_value() && e->token->token == rejected) e->token.reset();
}

void TokenCache::invalidate_older_than(const std::string& key, absl::Duration min_age) {
  std::shared_ptr<Entry> e = entry(key);
  std::lock_guard<std::mutex> lock(e->mu);
  if (!e->fetching && absl::Now() - e->fetched_at >= min_age) e->token.reset();
}

std::uint64_t TokenCache::fetch_count(const std::string& key) {
  std::shared_ptr<Entry> e = entry(key);
  std::lock_guard<std::mutex> lock(e->mu);
  return e->fetches;
}

}  // namespace dataflux::internal
