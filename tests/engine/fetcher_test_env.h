// A fixture for engine tests that run on both the embedded default (a local directory) and GCS
// (an in-process emulator on a free loopback port, one per test suite, a fresh bucket per test).
#ifndef DATAFLUX_TESTS_ENGINE_FETCHER_TEST_ENV_H_
#define DATAFLUX_TESTS_ENGINE_FETCHER_TEST_ENV_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dataflux/fetch.h"
#include "dataflux/gcs.h"
#include "dataflux/local.h"
#include "emulator/emulator.h"
#include "engine/dataset_listing.h"

namespace dataflux::testing {

inline std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<char>(rng() & 0xff);
  return out;
}

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    emulator::EmulatorOptions options;
    options.threads = 128;
    auto emu = emulator::Emulator::start(options);
    ASSERT_TRUE(emu.ok()) << emu.status();
    emu_ = emu->release();
  }
  static void TearDownTestSuite() {
    delete emu_;
    emu_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(emu_, nullptr);
    emu_->clear_faults();
    emu_->reset_counters();
    if (is_gcs()) {
      static std::atomic<int> counter{0};
      bucket_ = "fetch-" + std::to_string(counter++);
      ASSERT_TRUE(emu_->create_bucket(bucket_).ok());
      GcsOptions options;
      options.endpoint = emu_->endpoint();
      options.anonymous = true;
      options.retry.max_attempts = 5;
      options.retry.initial_backoff = std::chrono::milliseconds(1);
      options.retry.max_backoff = std::chrono::milliseconds(10);
      options.retry.deadline = std::chrono::seconds(20);
      options.transport.connect_timeout = std::chrono::seconds(5);  // a transport of its own
      store_ = make_gcs_store(options).value();
    } else {
      char tmpl[] = "/tmp/dataflux_fetch_XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      dir_ = tmpl;
      bucket_ = dir_;
      store_ = make_local_store(dir_, LocalOptions{false}).value();
    }
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  bool is_gcs() const { return GetParam() == "gcs"; }

  void put(const std::string& name, const std::string& data) {
    WriteObjectRequest request;
    request.bucket = bucket_;
    request.object = name;
    auto meta = store_->write_object(request, data);
    ASSERT_TRUE(meta.ok()) << meta.status();
  }

  // `count` objects under `prefix` with sizes spread over [0, max_size]; returns their bytes
  // in name order.
  std::vector<std::string> put_many(const std::string& prefix, int count, std::size_t max_size,
                                    std::uint64_t seed = 1) {
    std::vector<std::string> data;
    std::mt19937_64 rng(seed);
    for (int i = 0; i < count; ++i) {
      data.push_back(random_bytes(rng() % (max_size + 1), seed * 1000 + i));
      char name[32];
      std::snprintf(name, sizeof(name), "%05d", i);
      put(prefix + name, data.back());
    }
    return data;
  }

  std::vector<ObjectEntry> list(const std::string& prefix) {
    auto listing = internal::list_dataset_objects(*store_, bucket_, prefix);
    EXPECT_TRUE(listing.ok()) << listing.status();
    return listing.ok() ? *listing : std::vector<ObjectEntry>();
  }

  // Every stored name under `prefix`, Dataflux's temporaries included, straight from the server.
  std::vector<std::string> stored(const std::string& prefix) {
    std::vector<std::string> out;
    ListObjectsRequest request;
    request.bucket = bucket_;
    request.prefix = prefix;
    do {
      auto page = store_->list_objects(request);
      EXPECT_TRUE(page.ok()) << page.status();
      if (!page.ok()) break;
      for (const auto& o : page->objects) out.push_back(o.name);
      request.page_token = page->next_page_token;
    } while (!request.page_token.empty());
    return out;
  }

  // Names under the compose prefix, straight from the server.
  std::vector<std::string> composites() {
    std::vector<std::string> out;
    ListObjectsRequest request;
    request.bucket = bucket_;
    request.prefix = kComposedObjectsPrefix;
    auto page = store_->list_objects(request);
    EXPECT_TRUE(page.ok()) << page.status();
    if (page.ok()) {
      for (const auto& o : page->objects) out.push_back(o.name);
    }
    return out;
  }

  static emulator::Emulator* emu_;
  std::string dir_;
  std::string bucket_;
  std::shared_ptr<ObjectStore> store_;
};

inline emulator::Emulator* StoreTest::emu_ = nullptr;

}  // namespace dataflux::testing

#endif  // DATAFLUX_TESTS_ENGINE_FETCHER_TEST_ENV_H_
