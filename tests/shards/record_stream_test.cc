// The streaming pipeline the record datasets share: a reproducible shuffle buffer, and a
// stream that resumes at any position from the counts it reported, reading only what it must.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "dataflux/local.h"
#include "shards/order.h"
#include "shards/record_stream.h"
#include "shards/shards_test_env.h"

namespace dataflux::testing {
namespace {

TEST(ShuffleBuffer, OutputIsAFunctionOfSeedAndInputAndLosesNothing) {
  auto run = [](std::uint64_t seed, std::size_t capacity) {
    internal::ShuffleBuffer<int> b(capacity, seed);
    std::vector<int> out;
    for (int i = 0; i < 100; ++i) {
      if (auto o = b.push(i)) out.push_back(*o);
    }
    while (auto o = b.drain()) out.push_back(*o);
    return out;
  };
  EXPECT_EQ(run(1, 10), run(1, 10));
  EXPECT_NE(run(1, 10), run(2, 10));
  auto sorted = run(3, 10);
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sorted[i], i);
  std::vector<int> identity(100);
  for (int i = 0; i < 100; ++i) identity[i] = i;
  EXPECT_EQ(run(4, 0), identity);  // capacity 0 passes through
  // An item can only come out after it went in, at most `capacity` + 1 items late... and
  // never before: the first output appears with the 11th input.
  internal::ShuffleBuffer<int> b(10, 5);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(b.push(i).has_value());
  EXPECT_TRUE(b.push(10).has_value());
}

TEST(EpochOrder, RanksAreDisjointAndComplete) {
  std::vector<int> seen(101, 0);
  for (int r = 0; r < 4; ++r) {
    for (std::size_t i : internal::epoch_order(101, 7, 3, true, r, 4)) ++seen[i];
  }
  for (int c : seen) EXPECT_EQ(c, 1);
  EXPECT_NE(internal::epoch_order(101, 7, 3, true, 0, 1),
            internal::epoch_order(101, 7, 4, true, 0, 1));
}

// Sources are local files of newline-separated records.
class RecordStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dataflux-records-XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto store = make_local_store(dir_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *store;
    fetcher_ = std::make_shared<Fetcher>(store_, dir_);
    // 9 sources of 0..12 records (one empty).
    for (int s = 0; s < 9; ++s) {
      std::string data;
      const int n = s == 4 ? 0 : 3 + (s * 5) % 10;
      for (int r = 0; r < n; ++r) data += "s" + std::to_string(s) + "r" + std::to_string(r) + "\n";
      WriteObjectRequest w;
      w.bucket = dir_;
      w.object = "src" + std::to_string(s);
      auto meta = store_->write_object(w, data);
      ASSERT_TRUE(meta.ok()) << meta.status();
      sources_.push_back(ObjectEntry(*meta));
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  using Stream = internal::MixedRecordStream<std::string>;
  std::unique_ptr<Stream> stream(std::vector<std::uint64_t> counts, std::uint64_t position,
                                 std::size_t buffer = 7) {
    internal::RecordStreamOptions o;
    o.shuffle_buffer = buffer;
    o.seed = 42;
    o.prefetch.window_objects = 2;
    o.location = dir_;
    return std::make_unique<Stream>(
        fetcher_, sources_, o,
        [this](std::size_t, const ObjectEntry&, const FetchBuffer& bytes, std::uint64_t size,
               std::vector<std::string>* out) {
          ++parsed_;
          for (auto line :
               absl::StrSplit(absl::string_view(bytes.data, size), '\n', absl::SkipEmpty())) {
            out->emplace_back(line);
          }
          return absl::OkStatus();
        },
        std::move(counts), position);
  }

  std::string dir_;
  std::shared_ptr<ObjectStore> store_;
  std::shared_ptr<Fetcher> fetcher_;
  std::vector<ObjectEntry> sources_;
  int parsed_ = 0;
};

TEST_F(RecordStreamTest, ResumesExactlyFromEveryPositionWithTheCountsItReported) {
  auto full = stream({}, 0);
  std::vector<std::string> all;
  std::vector<std::vector<std::uint64_t>> counts_at;  // what save() would keep at each position
  while (true) {
    counts_at.push_back(full->counts());
    auto next = full->next();
    ASSERT_TRUE(next.ok()) << next.status();
    if (!next->has_value()) break;
    all.push_back(**next);
  }
  std::size_t total = 0;
  for (auto c : full->counts()) total += c;
  ASSERT_EQ(all.size(), total);
  ASSERT_EQ(std::set<std::string>(all.begin(), all.end()).size(), total);  // none twice
  for (std::size_t p = 0; p <= all.size(); ++p) {
    parsed_ = 0;
    auto resumed = stream(counts_at[p], p);
    std::vector<std::string> rest;
    while (true) {
      auto next = resumed->next();
      ASSERT_TRUE(next.ok()) << next.status();
      if (!next->has_value()) break;
      rest.push_back(**next);
    }
    EXPECT_EQ(rest, std::vector<std::string>(all.begin() + p, all.end())) << "position " << p;
    // It re-read only sources that still held a record it had to hand out.
    EXPECT_LE(parsed_, 9) << p;
  }
  // At the end, nothing is read again.
  parsed_ = 0;
  auto at_end = stream(full->counts(), all.size());
  auto next = at_end->next();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
  EXPECT_EQ(parsed_, 0);
}

TEST_F(RecordStreamTest, AResumeWithoutCountsReadsThemAndIsStillExact) {
  auto full = stream({}, 0, 5);
  std::vector<std::string> all;
  while (auto next = full->next().value()) all.push_back(*next);
  auto resumed = stream({}, 20, 5);
  std::vector<std::string> rest;
  while (auto next = resumed->next().value()) rest.push_back(*next);
  EXPECT_EQ(rest, std::vector<std::string>(all.begin() + 20, all.end()));
}

TEST_F(RecordStreamTest, ASourceThatChangedSinceTheSaveIsAnError) {
  auto resumed = stream({3, 2}, 1, 0);  // source 1 holds 8 records, not 2
  absl::Status status;
  while (true) {
    auto next = resumed->next();
    if (!next.ok()) {
      status = next.status();
      break;
    }
    if (!next->has_value()) break;
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("src1"));
}

}  // namespace
}  // namespace dataflux::testing
