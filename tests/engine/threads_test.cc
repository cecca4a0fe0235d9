// No thread per call: uploads and listings run their blocking store calls on the process-wide
// blocking pool, so however many of them run one after another, the store is called from a
// bounded set of threads (before the pools, each upload started K threads and each listing
// workers - 1, all new).
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

#include <gmock/gmock.h>

#include "core/thread_pool.h"
#include "dataflux/list_prefixes.h"
#include "dataflux/listing.h"
#include "dataflux/local.h"
#include "dataflux/upload.h"
#include "engine/lister_test_env.h"

namespace dataflux::testing {
namespace {

using ::testing::HasSubstr;

class ThreadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dataflux-threads-XXXXXX";
    dir_ = mkdtemp(tmpl);
    LocalOptions options;
    options.fsync = false;
    auto local = make_local_store(dir_, options);
    ASSERT_TRUE(local.ok()) << local.status();
    store_ = std::make_shared<TweakedStore>(*local);
    store_->on_call = [this] {
      const long tid = static_cast<long>(syscall(SYS_gettid));
      std::lock_guard<std::mutex> lock(mu_);
      callers_.insert(tid);
    };
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::size_t distinct_callers() {
    std::lock_guard<std::mutex> lock(mu_);
    return callers_.size();
  }

  // Every pool thread plus the calling thread.
  static constexpr std::size_t kBound = internal::ThreadPool::kBlockingThreads + 1;

  std::string dir_;
  std::shared_ptr<TweakedStore> store_;
  std::mutex mu_;
  std::set<long> callers_;
};

TEST_F(ThreadsTest, ManyUploadsInARowUseTheSamePoolThreads) {
  UploadOptions options;
  options.strategy = UploadStrategy::kParts;
  options.part_size = 1024;
  options.max_parts_in_flight = 4;
  const std::string data(8 * 1024, 'x');
  constexpr int kUploads = 40;  // 160 part threads if each upload started its own
  for (int i = 0; i < kUploads; ++i) {
    auto up = Uploader::create(store_, dir_, "obj-" + std::to_string(i), options);
    ASSERT_TRUE(up.ok()) << up.status();
    ASSERT_TRUE((*up)->write(data.data(), data.size()).ok());
    auto published = (*up)->commit();
    ASSERT_TRUE(published.ok()) << published.status();
    EXPECT_EQ(published->size, data.size());
    EXPECT_EQ((*up)->stats().parts, 8);
  }
  EXPECT_LE(distinct_callers(), kBound);
}

// A part upload runs on a pool thread: a store that throws there fails the upload with a
// status naming the part, instead of an exception escaping commit() (or a destructor).
TEST_F(ThreadsTest, AStoreThatThrowsDuringAPartFailsTheUpload) {
  std::atomic<int> calls{0};
  store_->on_call = [&] {
    if (++calls == 3) throw std::runtime_error("disk on fire");
  };
  UploadOptions options;
  options.strategy = UploadStrategy::kParts;
  options.part_size = 1024;
  options.max_parts_in_flight = 2;
  const std::string data(8 * 1024, 'y');
  auto up = Uploader::create(store_, dir_, "burning", options);
  ASSERT_TRUE(up.ok()) << up.status();
  absl::Status written = (*up)->write(data.data(), data.size());
  auto published = written.ok() ? (*up)->commit() : absl::StatusOr<ObjectMetadata>(written);
  EXPECT_EQ(published.status().code(), absl::StatusCode::kInternal) << published.status();
  EXPECT_THAT(std::string(published.status().message()), HasSubstr("disk on fire"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/burning"));
}

TEST_F(ThreadsTest, ManyListingsInARowUseTheSamePoolThreads) {
  std::filesystem::create_directories(dir_ + "/p");
  for (int i = 0; i < 120; ++i) {
    std::ofstream(dir_ + "/p/" + std::to_string(1000 + i), std::ios::binary) << "x";
  }
  ListOptions options;
  options.page_size = 5;  // many pages, so the workers start
  options.workers = 8;
  constexpr int kListings = 25;  // 175 worker threads if each listing started its own
  int parallel = 0;
  for (int i = 0; i < kListings; ++i) {
    ListStats stats;
    auto listing = list_objects_fast(*store_, dir_, "p/", options, &stats);
    ASSERT_TRUE(listing.ok()) << listing.status();
    EXPECT_EQ(listing->size(), 120u);
    if (stats.workers > 1) ++parallel;
  }
  EXPECT_EQ(parallel, kListings);
  // list_prefixes: its lanes are pool tasks too, each running a listing with its own workers.
  for (int i = 0; i < 5; ++i) {
    auto all = list_prefixes(*store_, dir_, {"p/10", "p/11", "p/12"}, options);
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_EQ(all->size(), 120u);
  }
  EXPECT_LE(distinct_callers(), kBound);
}

}  // namespace
}  // namespace dataflux::testing
