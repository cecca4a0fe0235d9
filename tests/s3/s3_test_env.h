// A fixture for S3 integration tests. By default it starts the in-process emulator with
// freshly generated access keys (SigV4 verified). With DATAFLUX_S3_TEST_ENDPOINT set (e.g.
// to an s3rver started by tests/s3/s3rver_test.sh) the same tests run against that server;
// tests that need the emulator's fault injection or signature checks then skip. Keys come
// from DATAFLUX_S3_TEST_ACCESS_KEY_ID / DATAFLUX_S3_TEST_SECRET_ACCESS_KEY (default S3RVER).
#ifndef DATAFLUX_TESTS_S3_S3_TEST_ENV_H_
#define DATAFLUX_TESTS_S3_S3_TEST_ENV_H_

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "dataflux/s3.h"
#include "emulator/emulator.h"

namespace dataflux::testing {

inline std::string random_token(std::size_t n, const char* alphabet) {
  static std::atomic<std::uint64_t> counter{0};
  std::mt19937_64 rng(std::random_device{}() ^ (counter++ * 0x9e3779b97f4a7c15ull));
  const std::size_t k = std::char_traits<char>::length(alphabet);
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(alphabet[rng() % k]);
  return out;
}

inline std::string random_data(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rng());
  return out;
}

class S3TestEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* endpoint = std::getenv("DATAFLUX_S3_TEST_ENDPOINT"); endpoint && *endpoint) {
      external_ = true;
      endpoint_ = endpoint;
      // s3rver's documented default pair (it checks no signatures), unless given.
      const char* key = std::getenv("DATAFLUX_S3_TEST_ACCESS_KEY_ID");
      const char* secret = std::getenv("DATAFLUX_S3_TEST_SECRET_ACCESS_KEY");
      access_key_ = key && *key ? key : "S3RVER";
      secret_ = secret && *secret ? secret : "S3RVER";
    } else {
      access_key_ = "AKIA" + random_token(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
      secret_ =
          random_token(40, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/+");
      emulator::EmulatorOptions options;
      options.s3.access_keys[access_key_] = secret_;
      options.s3.allow_anonymous = false;
      auto emu = emulator::Emulator::start(options);
      ASSERT_TRUE(emu.ok()) << emu.status();
      emu_ = *std::move(emu);
      endpoint_ = emu_->endpoint();
    }
    auto store = make_s3_store(options());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    bucket_ = "test-" + random_token(12, "abcdefghijklmnopqrstuvwxyz0123456789");
    ASSERT_TRUE(store_->create_bucket(bucket_).ok());
  }

  void TearDown() override {
    if (!store_ || !external_) return;
    // Leave an external server as we found it.
    std::vector<std::string> names;
    ListObjectsRequest list;
    list.bucket = bucket_;
    for (;;) {
      auto page = store_->list_objects(list);
      if (!page.ok()) break;
      for (const auto& o : page->objects) names.push_back(o.name);
      if (page->next_page_token.empty()) break;
      list.page_token = page->next_page_token;
    }
    (void)store_->delete_objects(bucket_, names);
    (void)store_->delete_bucket(bucket_);
  }

  S3Options options() const {
    S3Options o;
    o.endpoint = endpoint_;
    o.region = "us-east-1";
    o.access_key_id = access_key_;
    o.secret_access_key = secret_;
    o.addressing = S3Addressing::kPath;
    o.retry.initial_backoff = std::chrono::milliseconds(1);
    o.retry.max_backoff = std::chrono::milliseconds(5);
    o.retry.max_attempts = 5;
    return o;
  }

  ReadObjectRequest read_req(const std::string& object) const {
    ReadObjectRequest r;
    r.bucket = bucket_;
    r.object = object;
    return r;
  }
  WriteObjectRequest write(const std::string& object) const {
    WriteObjectRequest r;
    r.bucket = bucket_;
    r.object = object;
    return r;
  }
  std::string read_all(const std::string& object) {
    std::string out;
    auto r = store_->read_object(read_req(object), [&](const char* d, std::size_t n) {
      out.append(d, n);
      return absl::OkStatus();
    });
    EXPECT_TRUE(r.ok()) << r.status();
    return out;
  }

  bool external_ = false;
  std::unique_ptr<emulator::Emulator> emu_;
  std::string endpoint_;
  std::string access_key_;
  std::string secret_;
  std::shared_ptr<S3Store> store_;
  std::string bucket_;
};

// Skips a test that needs the in-process emulator (faults, counters, signature checks).
#define DATAFLUX_S3_NEEDS_EMULATOR() \
  if (external_) GTEST_SKIP() << "needs the in-process emulator"

}  // namespace dataflux::testing

#endif  // DATAFLUX_TESTS_S3_S3_TEST_ENV_H_
