// Shared by the upload and ranged-read tests: one store per backend, GCS (the in-process
// emulator, object bytes in files so a test can corrupt them) or a local directory, and
// backend-neutral helpers to read and list what is stored.
#ifndef DATAFLUX_TESTS_ENGINE_UPLOAD_TEST_ENV_H_
#define DATAFLUX_TESTS_ENGINE_UPLOAD_TEST_ENV_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "dataflux/local.h"
#include "gcs/gcs_test_env.h"

namespace dataflux::testing {

class BackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/dataflux-upload-test-XXXXXX";
    emu_dir_ = mkdtemp(tmpl);
    emulator::EmulatorOptions options;
    options.threads = 64;
    options.storage_dir = emu_dir_;
    auto emu = emulator::Emulator::start(options);
    ASSERT_TRUE(emu.ok()) << emu.status();
    emu_ = emu->release();
  }
  static void TearDownTestSuite() {
    delete emu_;
    emu_ = nullptr;
    std::filesystem::remove_all(emu_dir_);
  }

  bool gcs() const { return GetParam() == "gcs"; }

  void SetUp() override {
    ASSERT_NE(emu_, nullptr);
    emu_->clear_faults();
    emu_->reset_counters();
    if (gcs()) {
      static std::atomic<int> counter{0};
      bucket_ = "bucket-" + std::to_string(counter++);
      ASSERT_TRUE(emu_->create_bucket(bucket_).ok());
      GcsOptions options;
      options.endpoint = emu_->endpoint();
      options.anonymous = true;
      options.retry.max_attempts = 5;
      options.retry.initial_backoff = std::chrono::milliseconds(1);
      options.retry.max_backoff = std::chrono::milliseconds(10);
      options.retry.deadline = std::chrono::seconds(20);
      options.transport.connect_timeout = std::chrono::seconds(5);
      auto store = make_gcs_store(options);
      ASSERT_TRUE(store.ok()) << store.status();
      store_ = *store;
    } else {
      char tmpl[] = "/tmp/dataflux-local-XXXXXX";
      dir_ = mkdtemp(tmpl);
      bucket_ = dir_;
      LocalOptions options;
      options.fsync = false;
      auto store = make_local_store(dir_, options);
      ASSERT_TRUE(store.ok()) << store.status();
      store_ = *store;
    }
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Every object in the bucket by name, temporary files of the local store included.
  std::vector<std::string> all_names() {
    std::vector<std::string> names;
    if (gcs()) {
      for (const auto& o : emu_->list_objects(bucket_)) names.push_back(o.name);
    } else {
      for (const auto& e : std::filesystem::recursive_directory_iterator(dir_)) {
        if (e.is_regular_file()) {
          names.push_back(std::filesystem::relative(e.path(), dir_).string());
        }
      }
    }
    return names;
  }

  std::string stored(const std::string& name) {
    ReadObjectRequest r;
    r.bucket = bucket_;
    r.object = name;
    std::string out;
    auto got = store_->read_object(r, [&](const char* p, std::size_t n) {
      out.append(p, n);
      return absl::OkStatus();
    });
    EXPECT_TRUE(got.ok()) << got.status();
    return out;
  }

  static emulator::Emulator* emu_;
  static std::string emu_dir_;
  std::string dir_;
  std::string bucket_;
  std::shared_ptr<ObjectStore> store_;
};

inline emulator::Emulator* BackendTest::emu_ = nullptr;
inline std::string BackendTest::emu_dir_;

}  // namespace dataflux::testing

#endif  // DATAFLUX_TESTS_ENGINE_UPLOAD_TEST_ENV_H_
