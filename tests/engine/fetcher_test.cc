// The Fetcher on both backends: byte-exact concurrent reads within the budgets, faults, the
// prefetch window, and the dataset listing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "engine/fetcher_internal.h"
#include "fetcher_test_env.h"

namespace dataflux::testing {
namespace {

using emulator::Fault;
using ::testing::HasSubstr;

// Wraps a store and records how many asynchronous reads were in flight at once.
class CountingStore : public ObjectStore {
 public:
  explicit CountingStore(std::shared_ptr<ObjectStore> inner) : inner_(std::move(inner)) {}
  std::string_view backend() const override { return inner_->backend(); }
  std::string url(std::string_view bucket, std::string_view object) const override {
    return inner_->url(bucket, object);
  }
  StoreCapabilities capabilities() const override { return inner_->capabilities(); }
  absl::StatusOr<ListObjectsPage> list_objects(const ListObjectsRequest& r) override {
    return inner_->list_objects(r);
  }
  absl::StatusOr<ObjectMetadata> get_object_metadata(const std::string& b,
                                                     const std::string& o) override {
    return inner_->get_object_metadata(b, o);
  }
  absl::StatusOr<ReadObjectResult> read_object(const ReadObjectRequest& r, char* buffer,
                                               std::size_t capacity) override {
    return inner_->read_object(r, buffer, capacity);
  }
  absl::StatusOr<ReadObjectResult> read_object(const ReadObjectRequest& r,
                                               const ByteSink& sink) override {
    return inner_->read_object(r, sink);
  }
  void read_object_async(const ReadObjectRequest& r, char* buffer, std::size_t capacity,
                         AsyncCallback<ReadObjectResult> done) override {
    // A store that breaks its contract: it throws instead of reporting a status.
    for (int n = throw_next.load(); n > 0;) {
      if (throw_next.compare_exchange_weak(n, n - 1)) throw std::runtime_error("store exploded");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++requests_;
      bytes_ += capacity;
      peak_requests_ = std::max(peak_requests_, requests_);
      peak_bytes_ = std::max(peak_bytes_, bytes_);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++submitted_;
      submitted_cv_.notify_all();
    }
    inner_->read_object_async(r, buffer, capacity,
                              [this, capacity, done](absl::StatusOr<ReadObjectResult> result) {
                                {
                                  std::unique_lock<std::mutex> lock(mu_);
                                  // A fast store (a local disk) may finish a read before the next
                                  // is even asked for; held here, a read stays in flight until a
                                  // second one was asked for, so overlap shows whenever the caller
                                  // allows it. Bounded: a caller that never overlaps still finishes
                                  // (and fails the overlap check).
                                  if (hold_until_second_) {
                                    submitted_cv_.wait_for(lock, std::chrono::seconds(10),
                                                           [this] { return submitted_ >= 2; });
                                  }
                                  --requests_;
                                  bytes_ -= capacity;
                                }
                                done(std::move(result));
                              });
  }
  void hold_until_second_read() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_until_second_ = true;
  }
  absl::StatusOr<ObjectMetadata> write_object(const WriteObjectRequest& r,
                                              std::string_view data) override {
    return inner_->write_object(r, data);
  }
  absl::StatusOr<std::unique_ptr<WriteSession>> start_resumable_write(
      const WriteObjectRequest& r) override {
    return inner_->start_resumable_write(r);
  }
  absl::StatusOr<std::unique_ptr<WriteSession>> resume_resumable_write(
      const WriteObjectRequest& r, const std::string& id) override {
    return inner_->resume_resumable_write(r, id);
  }
  absl::StatusOr<ObjectMetadata> compose_object(const ComposeObjectRequest& r) override {
    return inner_->compose_object(r);
  }
  absl::StatusOr<ObjectMetadata> copy_object(const CopyObjectRequest& r) override {
    return inner_->copy_object(r);
  }
  absl::Status delete_object(const DeleteObjectRequest& r) override {
    return inner_->delete_object(r);
  }

  std::size_t peak_requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_requests_;
  }
  std::atomic<int> throw_next{0};  // the next N read_object_async calls throw
  std::size_t peak_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_bytes_;
  }

 private:
  std::shared_ptr<ObjectStore> inner_;
  std::mutex mu_;
  std::size_t requests_ = 0, bytes_ = 0, peak_requests_ = 0, peak_bytes_ = 0;
  std::size_t submitted_ = 0;
  bool hold_until_second_ = false;
  std::condition_variable submitted_cv_;
};

struct Buffers {
  std::vector<std::string> data;
  std::vector<FetchTarget> targets;
};

Buffers targets_for(const std::vector<ObjectEntry>& objects) {
  Buffers b;
  b.data.resize(objects.size());
  for (std::size_t i = 0; i < objects.size(); ++i) {
    b.data[i].assign(objects[i].size, '\0');
    b.targets.push_back({objects[i], b.data[i].data()});
  }
  return b;
}

class FetcherTest : public StoreTest {};

TEST_P(FetcherTest, ListingIsSortedAndSkipsPlaceholdersAndComposites) {
  put("data/b", "2");
  put("data/a", "1");
  put("data/sub/c", "3");
  if (is_gcs()) put("data/dir/", "");  // a "directory" placeholder
  put("other/x", "4");
  auto objects = list("data/");
  std::vector<std::string> names;
  for (const auto& o : objects) names.push_back(o.name);
  EXPECT_EQ(names, (std::vector<std::string>{"data/a", "data/b", "data/sub/c"}));
  EXPECT_EQ(objects[0].size, 1u);
  if (is_gcs()) {
    put(std::string(kComposedObjectsPrefix) + "left-over", "x");
    for (const auto& o : list("")) EXPECT_THAT(o.name, ::testing::Not(HasSubstr("composed")));
  }
}

TEST_P(FetcherTest, FetchesEveryObjectByteExactWithinBudgets) {
  auto data = put_many("many/", 120, 20000);
  auto counting = std::make_shared<CountingStore>(store_);
  FetchOptions options;
  options.max_requests_in_flight = 6;
  options.max_bytes_in_flight = 50000;
  options.disable_compose = true;
  Fetcher fetcher(counting, bucket_, options);
  auto objects = list("many/");
  ASSERT_EQ(objects.size(), data.size());
  Buffers b = targets_for(objects);
  ASSERT_TRUE(fetcher.fetch(b.targets).ok());
  EXPECT_EQ(b.data, data);
  EXPECT_LE(counting->peak_requests(), 6u);
  EXPECT_GT(counting->peak_requests(), 1u);  // really concurrent
  EXPECT_LE(counting->peak_bytes(), 50000u);
}

TEST_P(FetcherTest, AnObjectLargerThanTheByteBudgetStillRunsAlone) {
  std::string big = random_bytes(300000, 7);
  put("big/one", big);
  put("big/two", "small");
  FetchOptions options;
  options.max_bytes_in_flight = 1000;
  Fetcher fetcher(store_, bucket_, options);
  Buffers b = targets_for(list("big/"));
  ASSERT_TRUE(fetcher.fetch(b.targets).ok());
  EXPECT_EQ(b.data[0], big);
  EXPECT_EQ(b.data[1], "small");
}

TEST_P(FetcherTest, LargeObjectsAreReadInParallelRangesByteExact) {
  const std::string one = random_bytes(1000000, 11), two = random_bytes(700001, 12);
  put("ranged/one", one);
  put("ranged/two", two);
  put("ranged/small", "tiny");
  auto counting = std::make_shared<CountingStore>(store_);
  counting->hold_until_second_read();
  FetchOptions options;
  options.range_size = 65536;
  options.max_bytes_in_flight = 300000;
  Fetcher fetcher(counting, bucket_, options);
  Buffers b = targets_for(list("ranged/"));  // one, small, two
  ASSERT_TRUE(fetcher.fetch(b.targets).ok());
  EXPECT_EQ(b.data[0], one);
  EXPECT_EQ(b.data[1], "tiny");
  EXPECT_EQ(b.data[2], two);
  EXPECT_EQ(fetcher.stats().ranged_reads, 16u + 11u);  // ceil(1e6 / 64 Ki) + ceil(700001 / 64 Ki)
  EXPECT_EQ(fetcher.stats().direct_reads, 3u);
  EXPECT_GT(counting->peak_requests(), 1u);  // ranges of one object overlap
  EXPECT_LE(counting->peak_bytes(), 300000u);
}

TEST_P(FetcherTest, RangesThatDisagreeWithTheListedChecksumAreDataLoss) {
  put("ranged/bad", random_bytes(200000, 13));
  auto objects = list("ranged/");
  ASSERT_EQ(objects.size(), 1u);
  ASSERT_TRUE(objects[0].crc32c.has_value());
  *objects[0].crc32c ^= 1;  // what a corrupted byte would look like
  FetchOptions options;
  options.range_size = 65536;
  Fetcher fetcher(store_, bucket_, options);
  Buffers b = targets_for(objects);
  absl::Status s = fetcher.fetch(b.targets);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("ranged/bad"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("CRC32C mismatch"));
}

TEST_P(FetcherTest, UnorderedCompletionReportsEachTargetOnce) {
  auto data = put_many("cb/", 40, 5000);
  Fetcher fetcher(store_, bucket_);
  Buffers b = targets_for(list("cb/"));
  std::mutex mu;
  std::condition_variable cv;
  std::multiset<std::size_t> seen;
  bool done = false;
  absl::Status final_status = absl::UnknownError("not called");
  fetcher.fetch_async(
      b.targets,
      [&](std::size_t i, const absl::Status& s) {
        std::lock_guard<std::mutex> lock(mu);
        EXPECT_TRUE(s.ok()) << s;
        seen.insert(i);
      },
      [&](absl::Status s) {
        std::lock_guard<std::mutex> lock(mu);
        final_status = s;
        done = true;
        cv.notify_all();
      });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  EXPECT_TRUE(final_status.ok()) << final_status;
  ASSERT_EQ(seen.size(), data.size());
  for (std::size_t i = 0; i < data.size(); ++i) EXPECT_EQ(seen.count(i), 1u);
  EXPECT_EQ(b.data, data);
}

// A store that throws from read_object_async fails those items with Internal (whole reads and
// ranges alike); the fetch ends, the others land, and the Fetcher goes on working: no hang.
TEST_P(FetcherTest, AStoreThatThrowsFailsItsItemsAndHangsNothing) {
  auto data = put_many("throw/", 8, 3000, 41);
  auto objects = list("throw/");
  auto counting = std::make_shared<CountingStore>(store_);
  FetchOptions options;
  options.range_size = 1024;  // objects over 1 KiB are read as ranges
  Fetcher fetcher(counting, bucket_, options);
  counting->throw_next = 3;
  Buffers b = targets_for(objects);
  absl::Status s = fetcher.fetch(b.targets);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("the store threw instead of returning a status: "
                                                  "store exploded"));
  EXPECT_EQ(counting->throw_next.load(), 0);
  Buffers again = targets_for(objects);
  ASSERT_TRUE(fetcher.fetch(again.targets).ok());
  EXPECT_EQ(again.data, data);
}

TEST_P(FetcherTest, AChangedObjectFailsWithAnErrorNamingIt) {
  put("chg/a", "aaaa");
  put("chg/b", "bbbb");
  auto objects = list("chg/");
  put("chg/b", "different length");  // overwritten after the listing
  Fetcher fetcher(store_, bucket_);
  Buffers b = targets_for(objects);
  absl::Status s = fetcher.fetch(b.targets);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("chg/b"));
  EXPECT_EQ(b.data[0], "aaaa");
}

// Same size, so only the pinned generation tells: the error says what happened, not a bare 404.
TEST_P(FetcherTest, AnObjectOverwrittenOrDeletedSinceTheListingSaysSo) {
  put("gone/a", "aaaa");
  put("gone/b", "bbbb");
  put("gone/c", std::string(64, 'c'));
  auto objects = list("gone/");
  ASSERT_EQ(objects.size(), 3u);
  put("gone/b", "BBBB");
  DeleteObjectRequest remove;
  remove.bucket = bucket_;
  remove.object = "gone/c";
  ASSERT_TRUE(store_->delete_object(remove).ok());
  FetchOptions options;
  options.range_size = 16;  // gone/c is read as ranges
  Fetcher fetcher(store_, bucket_, options);
  for (std::size_t i : {1, 2}) {
    Buffers b = targets_for({objects[i]});
    absl::Status s = fetcher.fetch(b.targets);
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(absl::StrCat(store_->url(bucket_, objects[i].name), ": generation ",
                                       objects[i].generation,
                                       " listed at construction no longer exists: the object "
                                       "was overwritten or deleted")));
  }
}

TEST_P(FetcherTest, PrefetchStreamHandsOutInOrderAndStaysAtTheEnd) {
  auto data = put_many("pf/", 50, 8000);
  auto fetcher = std::make_shared<Fetcher>(store_, bucket_);
  PrefetchOptions options;
  options.window_objects = 7;
  options.window_bytes = 20000;
  options.chunk_objects = 3;
  PrefetchStream stream(fetcher, list("pf/"), options);
  for (std::size_t i = 0; i < data.size(); ++i) {
    auto item = stream.next();
    ASSERT_TRUE(item.ok()) << item.status();
    ASSERT_TRUE(item->has_value());
    EXPECT_EQ((*item)->position, i);
    EXPECT_EQ(std::string((*item)->buffer.data, (*item)->size), data[i]);
  }
  for (int k = 0; k < 3; ++k) {
    auto end = stream.next();
    ASSERT_TRUE(end.ok());
    EXPECT_FALSE(end->has_value());
  }
}

TEST_P(FetcherTest, PrefetchStreamDestroyedMidwayWaitsForItsReads) {
  put_many("pfd/", 60, 20000);
  auto fetcher = std::make_shared<Fetcher>(store_, bucket_);
  {
    PrefetchStream stream(fetcher, list("pfd/"));
    ASSERT_TRUE(stream.next().ok());
  }  // 59 reads may be in flight here: destruction must wait, not crash
  SUCCEED();
}

// fetch_async's promise: on_done runs once, after every on_item has returned, even when items
// complete on several threads at once (a read-ahead window frees a slot's waiters on on_done).
// Item 0's on_item is held until item 1 has completed on another thread: the group must not
// run on_done there, while item 0 is still inside on_item.
TEST(FetchGroupTest, OnDoneRunsAfterEveryOnItemHasReturned) {
  std::mutex mu;
  std::condition_variable cv;
  bool first_inside = false, other_finished = false;
  int returned = 0, returned_at_done = -1;
  auto group = std::make_shared<internal::FetchGroup>(
      std::vector<FetchTarget>(2),
      [&](std::size_t i, const absl::Status&) {
        std::unique_lock<std::mutex> lock(mu);
        if (i == 0) {
          first_inside = true;
          cv.notify_all();
          cv.wait_for(lock, std::chrono::seconds(10), [&] { return other_finished; });
        }
        ++returned;
      },
      [&](absl::Status) {
        std::lock_guard<std::mutex> lock(mu);
        returned_at_done = returned;
      });
  std::thread first([&] { group->item_done(0, absl::OkStatus()); });
  std::thread other([&] {
    {
      // Item 1 completes only once item 0 is inside its on_item.
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_for(lock, std::chrono::seconds(10), [&] { return first_inside; });
    }
    group->item_done(1, absl::OkStatus());
    std::lock_guard<std::mutex> lock(mu);
    other_finished = true;
    cv.notify_all();
  });
  first.join();
  other.join();
  EXPECT_EQ(returned, 2);
  EXPECT_EQ(returned_at_done, 2);
}

// A fetch refused as a whole (here: an allocator that gave no buffer) reports no item; the
// consumer waiting on it must get that error, not wait forever.
TEST_P(FetcherTest, PrefetchStreamReportsAFetchRefusedAsAWhole) {
  put_many("pfr/", 4, 1000);
  auto fetcher = std::make_shared<Fetcher>(store_, bucket_);
  PrefetchStream stream(fetcher, list("pfr/"), PrefetchOptions{},
                        [](std::uint64_t) { return FetchBuffer(); });
  auto item = stream.next();
  ASSERT_FALSE(item.ok());
  EXPECT_EQ(item.status().code(), absl::StatusCode::kInvalidArgument) << item.status();
  EXPECT_THAT(std::string(item.status().message()), HasSubstr("no buffer"));
  EXPECT_EQ(stream.next().status(), item.status());  // failed for good
}

INSTANTIATE_TEST_SUITE_P(Backends, FetcherTest, ::testing::Values("local", "gcs"));

// GCS only: faults from the emulator.
class FetcherFaultsTest : public StoreTest {};

TEST_P(FetcherFaultsTest, ByteExactUnderInjected503sResetsAndBrokenStreams) {
  auto data = put_many("faults/", 100, 30000, 3);
  for (int k = 0; k < 5; ++k) emu_->inject_fault("objects.media", Fault::status(503));
  emu_->inject_fault("objects.media", Fault::reset());
  emu_->inject_fault("objects.media", Fault::break_after(1000));
  emu_->inject_fault("objects.media", Fault::status(429));
  Fetcher fetcher(store_, bucket_);
  Buffers b = targets_for(list("faults/"));
  absl::Status s = fetcher.fetch(b.targets);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(b.data, data);
  EXPECT_EQ(emu_->pending_faults("objects.media"), 0u);
}

INSTANTIATE_TEST_SUITE_P(Gcs, FetcherFaultsTest, ::testing::Values("gcs"));

}  // namespace
}  // namespace dataflux::testing
