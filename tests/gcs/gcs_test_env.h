// A fixture for GCS integration tests: one in-process emulator per test suite, a fresh bucket
// per test, and a store pointed at it with millisecond backoffs so retries run fast.
#ifndef DATAFLUX_TESTS_GCS_GCS_TEST_ENV_H_
#define DATAFLUX_TESTS_GCS_GCS_TEST_ENV_H_

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "dataflux/gcs.h"
#include "emulator/emulator.h"

namespace dataflux::testing {

inline std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t v = rng();
    std::memcpy(&out[i], &v, 8);
  }
  for (; i < n; ++i) out[i] = static_cast<char>(rng());
  return out;
}

// Requests by name, so tests need not spell out every optional field.
inline ReadObjectRequest read_request(std::string bucket, std::string object) {
  ReadObjectRequest r;
  r.bucket = std::move(bucket);
  r.object = std::move(object);
  return r;
}
inline WriteObjectRequest write_request(std::string bucket, std::string object) {
  WriteObjectRequest r;
  r.bucket = std::move(bucket);
  r.object = std::move(object);
  return r;
}
inline DeleteObjectRequest delete_request(std::string bucket, std::string object,
                                          std::optional<std::int64_t> generation = {}) {
  DeleteObjectRequest r;
  r.bucket = std::move(bucket);
  r.object = std::move(object);
  r.if_generation_match = generation;
  return r;
}
inline ListObjectsRequest list_request(std::string bucket, std::string prefix = "") {
  ListObjectsRequest r;
  r.bucket = std::move(bucket);
  r.prefix = std::move(prefix);
  return r;
}
inline ComposeObjectRequest compose_request(std::string bucket, std::string destination) {
  ComposeObjectRequest r;
  r.bucket = std::move(bucket);
  r.destination = std::move(destination);
  return r;
}

class GcsEmulatorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    emulator::EmulatorOptions options;
    options.threads = 128;  // the concurrency tests keep many connections open
    auto emu = emulator::Emulator::start(options);
    ASSERT_TRUE(emu.ok()) << emu.status();
    emu_ = emu->release();
  }
  void TearDown() override { store_.reset(); }
  static void TearDownTestSuite() {
    delete emu_;
    emu_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(emu_, nullptr);
    emu_->clear_faults();
    emu_->reset_counters();
    static std::atomic<int> counter{0};
    bucket_ = "bucket-" + std::to_string(counter++);
    ASSERT_TRUE(emu_->create_bucket(bucket_).ok());
    auto store = make_gcs_store(options());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *store;
  }

  static GcsOptions options() {
    GcsOptions options;
    options.endpoint = emu_->endpoint();
    options.anonymous = true;
    options.project = "test-project";
    options.retry.max_attempts = 5;
    options.retry.initial_backoff = std::chrono::milliseconds(1);
    options.retry.max_backoff = std::chrono::milliseconds(10);
    options.retry.deadline = std::chrono::seconds(20);
    // Not the default, so each store gets a transport of its own that closes its keep-alive
    // connections when the test ends: the emulator's shutdown otherwise waits for them to idle
    // out (5 s), once per test when ctest runs each test in its own process.
    options.transport.connect_timeout = std::chrono::seconds(5);
    return options;
  }

  // Puts an object directly into the emulator (no HTTP) and returns its generation.
  std::int64_t seed_object(const std::string& name, std::string data) {
    auto info = emu_->put_object(bucket_, name, std::move(data));
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->generation : 0;
  }

  std::string stored(const std::string& name) {
    auto data = emu_->get_object_data(bucket_, name);
    EXPECT_TRUE(data.ok()) << data.status();
    return data.ok() ? *data : std::string();
  }

  bool exists(const std::string& name) { return emu_->get_object_data(bucket_, name).ok(); }

  static emulator::Emulator* emu_;
  std::string bucket_;
  std::shared_ptr<GcsStore> store_;
};

inline emulator::Emulator* GcsEmulatorTest::emu_ = nullptr;

}  // namespace dataflux::testing

#endif  // DATAFLUX_TESTS_GCS_GCS_TEST_ENV_H_
