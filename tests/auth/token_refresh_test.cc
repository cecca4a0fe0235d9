// Tokens over time: expiry, 401s and one refresh, rejected keys, absent metadata servers, many
// threads sharing one cache, and secrets that never reach a status message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "auth/token_cache.h"
#include "auth_test_env.h"
#include "dataflux/credentials.h"

namespace dataflux::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// --- TokenCache with a fake source -------------------------------------------------------------

class FakeSource : public internal::TokenSource {
 public:
  explicit FakeSource(std::string key, absl::Duration lifetime = absl::Hours(1))
      : key_(std::move(key)), lifetime_(lifetime) {}
  const std::string& cache_key() const override { return key_; }
  absl::StatusOr<internal::AccessToken> fetch() override {
    int n = ++fetches;
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms.load()));
    if (fail.load()) return absl::UnavailableError("token endpoint down");
    return internal::AccessToken{"token-" + std::to_string(n), absl::Now() + lifetime_};
  }
  std::atomic<int> fetches{0};
  std::atomic<int> delay_ms{0};
  std::atomic<bool> fail{false};

 private:
  std::string key_;
  absl::Duration lifetime_;
};

std::string unique_key() { return "fake|" + unique_email(); }

TEST(TokenCache, ConcurrentCallersWithoutATokenShareOneFetch) {
  FakeSource source(unique_key());
  source.delay_ms = 50;
  auto& cache = internal::TokenCache::instance();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 32; ++i) {
    threads.emplace_back([&] {
      auto t = cache.get(source, absl::Minutes(5));
      if (t.ok() && t->token == "token-1") ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 32);
  EXPECT_EQ(source.fetches.load(), 1);
}

TEST(TokenCache, EarlyRefreshByOneCallerWhileOthersUseTheValidToken) {
  // Lifetime 10 s, refresh ahead 20 s: every token is "due", but still valid.
  FakeSource source(unique_key(), absl::Seconds(10));
  auto& cache = internal::TokenCache::instance();
  ASSERT_EQ(cache.get(source, absl::Seconds(20))->token, "token-1");
  source.delay_ms = 200;
  std::thread refresher([&] { EXPECT_EQ(cache.get(source, absl::Seconds(20))->token, "token-2"); });
  while (source.fetches.load() < 2) std::this_thread::yield();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(cache.get(source, absl::Seconds(20))->token, "token-1");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(150));  // no wait
  refresher.join();
  EXPECT_EQ(source.fetches.load(), 2);
}

TEST(TokenCache, FailedEarlyRefreshKeepsTheValidTokenAndWaitersGetTheError) {
  FakeSource source(unique_key(), absl::Seconds(10));
  auto& cache = internal::TokenCache::instance();
  ASSERT_EQ(cache.get(source, absl::Seconds(20))->token, "token-1");
  source.fail = true;
  EXPECT_EQ(cache.get(source, absl::Seconds(20))->token, "token-1");
  cache.invalidate(source.cache_key(), "token-1");
  source.delay_ms = 50;
  std::vector<std::thread> threads;
  std::atomic<int> unavailable{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      auto t = cache.get(source, absl::Seconds(20));
      if (!t.ok() && t.status().code() == absl::StatusCode::kUnavailable) ++unavailable;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(unavailable.load(), 8);
  EXPECT_LE(source.fetches.load(), 2 + 8);  // bounded; usually 3
}

TEST(TokenCache, InvalidateOnlyForgetsTheCurrentToken) {
  FakeSource source(unique_key());
  auto& cache = internal::TokenCache::instance();
  ASSERT_EQ(cache.get(source, absl::Minutes(5))->token, "token-1");
  cache.invalidate(source.cache_key(), "token-0");  // an old one: ignored
  EXPECT_EQ(cache.get(source, absl::Minutes(5))->token, "token-1");
  cache.invalidate(source.cache_key(), "token-1");
  EXPECT_EQ(cache.get(source, absl::Minutes(5))->token, "token-2");
  cache.invalidate(source.cache_key(), "token-1");  // 64 threads holding token-1 report late
  EXPECT_EQ(cache.get(source, absl::Minutes(5))->token, "token-2");
  EXPECT_EQ(source.fetches.load(), 2);
}

// --- Against the emulator ---------------------------------------------------------------------

TEST(TokenRefresh, ExpiredTokensAreRefreshedOnceAfterA401) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  GcsOptions gcs = a.gcs_options(make_credentials_from_json(a.sa_json()).value());
  auto store = make_gcs_store(gcs).value();
  ASSERT_TRUE(a.emu->put_object("auth-bucket", "o", "data").ok());
  ASSERT_TRUE(store->get_object_metadata("auth-bucket", "o").ok());
  EXPECT_EQ(a.emu->request_count("oauth.token"), 1u);
  for (int round = 0; round < 3; ++round) {
    a.emu->expire_tokens();
    auto meta = store->get_object_metadata("auth-bucket", "o");
    EXPECT_TRUE(meta.ok()) << meta.status();
    EXPECT_TRUE(store->get_object_metadata("auth-bucket", "o").ok());
  }
  EXPECT_EQ(a.emu->request_count("oauth.token"), 4u);
}

TEST(TokenRefresh, ResumableUploadSurvivesTokensExpiringBetweenChunks) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  GcsOptions gcs = a.gcs_options(make_credentials_from_json(a.sa_json()).value());
  gcs.resumable_chunk_size = 256 << 10;
  auto store = make_gcs_store(gcs).value();
  std::string data(1 << 20, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + (i >> 9));
  WriteObjectRequest request;
  request.bucket = "auth-bucket";
  request.object = "long-upload";
  auto session = store->start_resumable_write(request);
  ASSERT_TRUE(session.ok()) << session.status();
  for (std::size_t off = 0; off < data.size(); off += 256 << 10) {
    a.emu->expire_tokens();  // every chunk meets a 401 first
    ASSERT_TRUE((*session)->write(std::string_view(data).substr(off, 256 << 10)).ok());
  }
  a.emu->expire_tokens();
  auto meta = (*session)->finish();
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->size, data.size());
  EXPECT_EQ(a.emu->get_object_data("auth-bucket", "long-upload").value(), data);
}

// Hands out a valid token until revoked, then one the server always rejects.
class RevocableCredentials : public Credentials {
 public:
  explicit RevocableCredentials(std::shared_ptr<Credentials> inner) : inner_(std::move(inner)) {}
  absl::StatusOr<std::optional<std::string>> authorization_header() override {
    if (revoked_) return std::optional<std::string>("Bearer revoked-token");
    return inner_->authorization_header();
  }
  void on_unauthorized(std::string_view rejected) override {
    ++unauthorized_;
    inner_->on_unauthorized(rejected);
  }
  std::atomic<bool> revoked_{false};
  std::atomic<int> unauthorized_{0};

 private:
  std::shared_ptr<Credentials> inner_;
};

TEST(TokenRefresh, PersistentUnauthorizedIsAnErrorAfterOneRefresh) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  auto creds =
      std::make_shared<RevocableCredentials>(make_credentials_from_json(a.sa_json()).value());
  GcsOptions gcs = a.gcs_options(creds);
  gcs.resumable_chunk_size = 256 << 10;
  auto store = make_gcs_store(gcs).value();
  WriteObjectRequest request;
  request.bucket = "auth-bucket";
  request.object = "revoked-upload";
  auto session = store->start_resumable_write(request);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->write(std::string(256 << 10, 'x')).ok());
  creds->revoked_ = true;
  // Resuming queries the upload's status: one refresh, then a clear error, never a loop.
  auto resumed = store->resume_resumable_write(request, (*session)->session_id());
  EXPECT_EQ(resumed.status().code(), absl::StatusCode::kUnauthenticated) << resumed.status();
  EXPECT_EQ(creds->unauthorized_.load(), 1);
  auto write = (*session)->write(std::string(256 << 10, 'y'));
  EXPECT_EQ(write.code(), absl::StatusCode::kUnauthenticated) << write;
  EXPECT_EQ(creds->unauthorized_.load(), 2);
  auto meta = store->get_object_metadata("auth-bucket", "o-missing");
  EXPECT_EQ(meta.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(std::string(meta.status().message()).find("revoked-token"), std::string::npos);
}

TEST(TokenRefresh, LateReportsOfAnOldTokenKeepTheFreshOne) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  auto creds = make_credentials_from_json(a.sa_json()).value();
  std::string first = **creds->authorization_header();
  creds->on_unauthorized(first);
  std::string second = **creds->authorization_header();
  EXPECT_NE(first, second);
  for (int i = 0; i < 64; ++i) creds->on_unauthorized(first);  // stragglers with the old token
  EXPECT_EQ(**creds->authorization_header(), second);
  creds->on_unauthorized("Basic something-else");  // not ours: ignored
  EXPECT_EQ(**creds->authorization_header(), second);
  EXPECT_EQ(a.emu->request_count("oauth.token"), 2u);
}

TEST(TokenRefresh, ShortLivedTokensAreRefreshedAheadOfExpiry) {
  EnvGuard env;
  // Tokens live 2 s and are refreshed 1 s ahead: a 3 s run needs a few tokens and no 401 fails.
  auto a = AuthEmulator::start(absl::Seconds(2));
  AuthOptions auth;
  auth.refresh_ahead = std::chrono::seconds(1);
  auth.retry = fast_retry();
  GcsOptions gcs = a.gcs_options(make_credentials_from_json(a.user_json(), auth).value());
  auto store = make_gcs_store(gcs).value();
  ASSERT_TRUE(a.emu->put_object("auth-bucket", "o", "data").ok());
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int requests = 0;
  while (std::chrono::steady_clock::now() < end) {
    auto meta = store->get_object_metadata("auth-bucket", "o");
    ASSERT_TRUE(meta.ok()) << meta.status();
    ++requests;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GT(requests, 50);
  EXPECT_GE(a.emu->request_count("oauth.token"), 2u);
  EXPECT_LE(a.emu->request_count("oauth.token"), 6u);
}

TEST(TokenRefresh, ManyThreadsWithTokensExpiringMidRunCauseAHandfulOfFetches) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  ASSERT_TRUE(a.emu->put_object("auth-bucket", "o", "data").ok());
  auto store =
      make_gcs_store(a.gcs_options(make_credentials_from_json(a.sa_json()).value())).value();
  constexpr int kThreads = 64;
  constexpr int kRequests = 200;
  std::mutex mu;
  std::condition_variable progressed;
  int done = 0;  // guarded by mu
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      for (int r = 0; r < kRequests; ++r) {
        auto meta = store->get_object_metadata("auth-bucket", "o");
        if (!meta.ok()) {
          if (failed++ == 0) ADD_FAILURE() << meta.status();
        }
        {
          std::lock_guard<std::mutex> lock(mu);
          ++done;
        }
        progressed.notify_all();
      }
    });
  }
  // Expire every token three times while the threads run: after a quarter, a half and three
  // quarters of the requests.
  for (int k = 1; k <= 3; ++k) {
    std::unique_lock<std::mutex> lock(mu);
    progressed.wait(lock, [&] { return done >= k * kThreads * kRequests / 4; });
    lock.unlock();
    a.emu->expire_tokens();
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(done, kThreads * kRequests);
  EXPECT_GE(a.emu->request_count("oauth.token"), 2u);
  EXPECT_LE(a.emu->request_count("oauth.token"), 8u);  // 1 + 3 expiries, plus a little slack
  RecordProperty("oauth_token_requests", static_cast<int>(a.emu->request_count("oauth.token")));
}

TEST(TokenRefresh, WrongKeyIsPermissionDenied) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  std::string json = service_account_json(a.email, a.emu->token_uri(), other_key().private_pem);
  auto creds = make_credentials_from_json(json).value();
  auto header = creds->authorization_header();
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().code(), absl::StatusCode::kPermissionDenied);
  std::string message(header.status().message());
  EXPECT_THAT(message, HasSubstr("service account " + a.email));
  EXPECT_THAT(message, HasSubstr("invalid_grant"));
  EXPECT_THAT(message, HasSubstr(a.emu->token_uri()));
  EXPECT_EQ(a.emu->request_count("oauth.token"), 1u);  // not retried
  // Through the store, the request fails with the same code and no retry storm.
  auto status = write_and_read(a.gcs_options(creds), "wrong-key");
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
}

TEST(TokenRefresh, RevokedRefreshTokenAndWrongSecretArePermissionDenied) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  auto revoked = make_credentials_from_json(
      authorized_user_json(a.client_id, "refresh-token-REVOKED", a.emu->token_uri()));
  auto header = (*revoked)->authorization_header();
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(header.status().message()), HasSubstr("client " + a.client_id));
  EXPECT_THAT(std::string(header.status().message()), Not(HasSubstr("REVOKED")));
  EXPECT_THAT(std::string(header.status().message()), Not(HasSubstr(kClientSecret)));
}

TEST(TokenRefresh, TransientTokenEndpointErrorsAreRetried) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  a.emu->inject_fault("oauth.token", emulator::Fault::status(503));
  a.emu->inject_fault("oauth.token", emulator::Fault::reset());
  a.emu->inject_fault("oauth.token", emulator::Fault::status(429));
  AuthOptions auth;
  auth.retry = fast_retry();
  auto creds = make_credentials_from_json(a.sa_json(), auth).value();
  auto header = creds->authorization_header();
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(a.emu->request_count("oauth.token"), 4u);
}

TEST(TokenRefresh, MetadataServerThatNeverAnswersFailsFast) {
  EnvGuard env;
  // A listening socket that is never accepted from: TCP connects, no HTTP answer ever comes.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::string host = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  env.set("GCE_METADATA_HOST", host);
  TempDir dir;
  env.set("HOME", dir.path());

  auto start = std::chrono::steady_clock::now();
  auto header = make_google_default_credentials()->authorization_header();
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::milliseconds(3000));  // ~1 s, not libcurl's minutes
  EXPECT_GE(elapsed, std::chrono::milliseconds(900));
  ASSERT_FALSE(header.ok());
  EXPECT_THAT(std::string(header.status().message()), HasSubstr("GCE metadata server"));
  EXPECT_THAT(std::string(header.status().message()), HasSubstr(host));

  start = std::chrono::steady_clock::now();
  auto direct = make_compute_engine_credentials()->authorization_header();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  EXPECT_FALSE(direct.ok());
  ::close(fd);
}

TEST(TokenRefresh, MetadataServerOnAClosedPortFailsFast) {
  EnvGuard env;
  env.set("GCE_METADATA_HOST", "127.0.0.1:1");
  auto start = std::chrono::steady_clock::now();
  auto header = make_compute_engine_credentials()->authorization_header();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  EXPECT_FALSE(header.ok());
}

TEST(TokenRefresh, NoSecretEverAppearsInAStatusMessage) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  std::vector<std::string> messages;
  auto collect = [&](const absl::Status& s) { messages.emplace_back(s.ToString()); };

  // Wrong key, revoked refresh token, wrong client secret, malformed files, a 401 from storage.
  collect(make_credentials_from_json(
              service_account_json(a.email, a.emu->token_uri(), other_key().private_pem))
              .value()
              ->authorization_header()
              .status());
  collect(make_credentials_from_json(
              authorized_user_json(a.client_id, a.refresh_token + "-x", a.emu->token_uri()))
              .value()
              ->authorization_header()
              .status());
  std::string wrong_secret = json_of({{"type", "authorized_user"},
                                      {"client_id", a.client_id},
                                      {"client_secret", "WRONG-SECRET-abc"},
                                      {"refresh_token", a.refresh_token},
                                      {"token_uri", a.emu->token_uri()}});
  collect(make_credentials_from_json(wrong_secret).value()->authorization_header().status());
  collect(make_credentials_from_json(
              json_of({{"type", "service_account"}, {"private_key", test_key().private_pem}}))
              .status());
  collect(make_credentials_from_json(json_of({{"type", "authorized_user"},
                                              {"client_secret", kClientSecret},
                                              {"refresh_token", a.refresh_token}}))
              .status());
  // A valid token, then the server forgets it and the refresh fails: the 401 message.
  auto good = make_credentials_from_json(a.sa_json()).value();
  std::string token = **good->authorization_header();
  auto store = make_gcs_store(a.gcs_options(good)).value();
  a.emu->set_auth([&] {
    emulator::AuthConfig c;
    c.require_auth = true;  // no keys any more: the refresh is refused
    return c;
  }());
  a.emu->expire_tokens();
  collect(store->get_object_metadata("auth-bucket", "missing").status());

  for (const auto& m : messages) {
    EXPECT_FALSE(m.empty());
    EXPECT_THAT(m, Not(HasSubstr("PRIVATE KEY")));
    EXPECT_THAT(m, Not(HasSubstr(test_key().private_pem.substr(40, 40))));
    EXPECT_THAT(m, Not(HasSubstr(other_key().private_pem.substr(40, 40))));
    EXPECT_THAT(m, Not(HasSubstr(kClientSecret)));
    EXPECT_THAT(m, Not(HasSubstr("WRONG-SECRET")));
    EXPECT_THAT(m, Not(HasSubstr(a.refresh_token)));
    EXPECT_THAT(m, Not(HasSubstr(token.substr(7))));
    EXPECT_THAT(m, Not(HasSubstr("eyJ")));  // no JWT
  }
  EXPECT_EQ(messages.size(), 6u);
}

}  // namespace
}  // namespace dataflux::testing

namespace dataflux::testing {
namespace {

// Reads retry on the transport's loop thread; a 401 there must still refresh the token (the
// fetch cannot run on the loop it would wait for).
TEST(TokenRefresh, ReadsRefreshAfterA401) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  GcsOptions gcs = a.gcs_options(make_credentials_from_json(a.sa_json()).value());
  auto store = make_gcs_store(gcs).value();
  std::string data(300'000, 'r');
  ASSERT_TRUE(a.emu->put_object("auth-bucket", "read-me", data).ok());
  std::string buffer(data.size(), '\0');
  ReadObjectRequest request;
  request.bucket = "auth-bucket";
  request.object = "read-me";
  for (int round = 0; round < 3; ++round) {
    a.emu->expire_tokens();
    auto read = store->read_object(request, buffer.data(), buffer.size());
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(buffer, data);
  }
  // An async read whose token expires also refreshes and completes.
  a.emu->expire_tokens();
  std::promise<absl::StatusOr<ReadObjectResult>> done;
  store->read_object_async(request, buffer.data(), buffer.size(),
                           [&](absl::StatusOr<ReadObjectResult> r) { done.set_value(r); });
  auto async = done.get_future().get();
  EXPECT_TRUE(async.ok()) << async.status();
}

}  // namespace
}  // namespace dataflux::testing
