// The shard tests' backends: a local directory, and GCS and S3 on one in-process emulator.
// A test names its objects by URL (local paths, gs://, s3://) and reads them back by URL.
#ifndef DATAFLUX_TESTS_SHARDS_SHARDS_TEST_ENV_H_
#define DATAFLUX_TESTS_SHARDS_SHARDS_TEST_ENV_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "../torch/backends.h"
#include "dataflux/gcs.h"
#include "dataflux/object_store.h"
#include "dataflux/open_store.h"
#include "dataflux/s3.h"
#include "dataflux/url.h"
#include "emulator/emulator.h"

namespace dataflux::testing {

class ShardBackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    emulator::EmulatorOptions options;
    enable_test_s3(options);
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
    static std::atomic<int> counter{0};
    const std::string bucket = "shards-" + std::to_string(counter++);
    if (GetParam() == "local") {
      char tmpl[] = "/tmp/dataflux-shards-XXXXXX";
      dir_ = mkdtemp(tmpl);
      root_ = "file://" + dir_ + "/";
      return;
    }
    ASSERT_TRUE(emu_->create_bucket(bucket).ok());
    if (GetParam() == "gcs") {
      GcsOptions o;
      o.endpoint = emu_->endpoint();
      o.anonymous = true;
      o.retry.max_attempts = 5;
      o.retry.initial_backoff = std::chrono::milliseconds(1);
      o.retry.max_backoff = std::chrono::milliseconds(10);
      auto store = make_gcs_store(o);
      ASSERT_TRUE(store.ok()) << store.status();
      store_ = *store;
      root_ = "gs://" + bucket + "/";
    } else {
      auto store = make_s3_store(test_s3_options(*emu_));
      ASSERT_TRUE(store.ok()) << store.status();
      store_ = *store;
      root_ = "s3://" + bucket + "/";
    }
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // The store for URLs under root_ (nullptr on local: open_store opens paths).
  std::shared_ptr<ObjectStore> store() const { return store_; }
  std::shared_ptr<ObjectStore> any_store(const std::string& url) const {
    if (store_) return store_;
    return open_store(url).value();
  }

  std::string read(const std::string& url) const {
    auto parsed = StorageUrl::parse(url).value();
    ReadObjectRequest r;
    r.bucket = parsed.bucket;
    r.object = parsed.object;
    std::string out;
    auto got = any_store(url)->read_object(r, [&](const char* p, std::size_t n) {
      out.append(p, n);
      return absl::OkStatus();
    });
    EXPECT_TRUE(got.ok()) << got.status();
    return out;
  }
  void put(const std::string& url, const std::string& data) const {
    auto parsed = StorageUrl::parse(url).value();
    WriteObjectRequest w;
    w.bucket = parsed.bucket;
    w.object = parsed.object;
    auto written = any_store(url)->write_object(w, data);
    ASSERT_TRUE(written.ok()) << written.status();
  }

  static emulator::Emulator* emu_;
  std::string dir_;
  std::string root_;  // "gs://shards-N/", "s3://shards-N/" or "file:///tmp/dataflux-shards-X/"
  std::shared_ptr<ObjectStore> store_;
};

inline emulator::Emulator* ShardBackendTest::emu_ = nullptr;

}  // namespace dataflux::testing

#endif  // DATAFLUX_TESTS_SHARDS_SHARDS_TEST_ENV_H_
