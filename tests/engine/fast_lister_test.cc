// Property tests: for adversarial name sets, the parallel listing equals the sequential one
// and what the emulator holds, also under injected faults.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>

#include "dataflux/list_prefixes.h"
#include "dataflux/local.h"
#include "engine/lister_test_env.h"
#include "engine/range_splitter.h"

namespace dataflux::testing {
namespace {

class FastListerTest : public GcsEmulatorTest {
 protected:
  // Seeds `names` with sizes that vary, so sizes and checksums are checked too.
  void seed(const std::vector<std::string>& names) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      seed_object(names[i], std::string(i % 13, static_cast<char>('a' + i % 26)));
    }
  }

  // What the emulator holds under `prefix`, after the default filters.
  std::vector<Row> expected(const std::string& prefix = "") {
    std::vector<Row> out;
    for (const auto& o : emu_->list_objects(bucket_)) {
      if (o.name.compare(0, prefix.size(), prefix) != 0) continue;
      if (!o.name.empty() && o.name.back() == '/') continue;
      out.push_back({o.name, o.size, o.generation, o.crc32c});
    }
    return out;
  }

  Listing list(ObjectStore& store, const std::string& prefix, int workers, int page_size,
               ListStats* stats = nullptr) {
    ListOptions options;
    options.workers = workers;
    options.page_size = page_size;
    auto listing = list_objects_fast(store, bucket_, prefix, options, stats);
    EXPECT_TRUE(listing.ok()) << listing.status();
    return listing.ok() ? *std::move(listing) : Listing();
  }

  // Sequential and parallel listings of `prefix` both equal the emulator's contents; returns
  // the parallel run's stats.
  ListStats check(const std::string& prefix, int page_size, int workers = 8) {
    auto want = expected(prefix);
    ListStats seq_stats, par_stats;
    Listing sequential = list(*store_, prefix, 1, page_size, &seq_stats);
    Listing parallel = list(*store_, prefix, workers, page_size, &par_stats);
    EXPECT_EQ(rows(sequential), want);
    EXPECT_EQ(rows(parallel), want);
    EXPECT_EQ(seq_stats.workers, 1);
    EXPECT_EQ(par_stats.objects, want.size());
    return par_stats;
  }
};

TEST_F(FastListerTest, EmptyBucket) {
  ListStats stats;
  Listing l = list(*store_, "", 8, 1000, &stats);
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(stats.requests, 1u);
  EXPECT_EQ(stats.workers, 1);
  EXPECT_EQ(l.source(), "gs://" + bucket_);
}

TEST_F(FastListerTest, OneObject) {
  seed({"only"});
  check("", 1);
  check("", 1000);
  check("on", 1);
  check("x", 1);  // a prefix that matches nothing
}

TEST_F(FastListerTest, LongSharedPrefix) {
  const std::string shared(300, 'p');
  std::vector<std::string> names;
  for (int i = 0; i < 600; ++i) names.push_back(shared + "/" + std::to_string(i * 7919 % 100000));
  names.push_back(shared);  // the shared prefix itself is a name too
  seed(names);
  ListStats stats = check("", 20);
  EXPECT_GT(stats.splits, 0u);
  check(shared + "/", 20);
}

TEST_F(FastListerTest, UnicodeAndHighCodePointNames) {
  // Characters whose UTF-8 bytes are high (\xc3\xbf = U+00FF, \xf4\x8f\xbf\xbf = U+10FFFF)
  // next to ASCII, the lowest and highest bytes object names may contain.
  const std::vector<std::string> alphabet = {"a",
                                             "Z",
                                             "~",
                                             "\x7f",
                                             "\xc3\xa9",
                                             "\xc3\xbf",
                                             "\xe6\x97\xa5",
                                             "\xef\xbf\xbf",
                                             "\xf0\x9f\x98\x80",
                                             "\xf4\x8f\xbf\xbf",
                                             "/",
                                             " "};
  std::mt19937 rng(42);
  std::set<std::string> names;
  while (names.size() < 800) {
    std::string n;
    const int len = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < len; ++i) n += alphabet[rng() % alphabet.size()];
    if (n.back() == '/' || n.front() == '/') continue;
    names.insert(n);
  }
  seed({names.begin(), names.end()});
  ListStats stats = check("", 25);
  EXPECT_GT(stats.splits, 0u);
  check("\xc3\xbf", 10);
  check("\xf4\x8f\xbf\xbf", 10);
}

// Names that are exactly the cut points the splitter produces for ranges over the set, so
// ranges start and end on existing names.
TEST_F(FastListerTest, NamesExactlyAtSplitPoints) {
  std::set<std::string> names;
  for (int i = 0; i < 200; ++i) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "k-%03d", i);
    names.insert(buf);
  }
  internal::RangeSplitter splitter;
  std::vector<std::string> base(names.begin(), names.end());
  for (std::size_t i = 0; i < base.size(); ++i) {
    for (int n = 1; n <= 8; n *= 2) {
      for (const auto& cut : splitter.split_range(base[i], "", n)) names.insert(cut);
      if (i + 1 < base.size()) {
        for (const auto& cut : splitter.split_range(base[i], base[i + 1], n)) names.insert(cut);
      }
    }
  }
  for (const auto& cut : splitter.split_range("", "", 32)) names.insert(cut);
  names.erase("");
  for (auto it = names.begin(); it != names.end();) {
    it = it->back() == '/' ? names.erase(it) : std::next(it);
  }
  ASSERT_GT(names.size(), 600u);
  seed({names.begin(), names.end()});
  for (int page : {3, 50}) {
    SCOPED_TRACE(page);
    check("", page, 16);
  }
}

TEST_F(FastListerTest, ThirtyThousandInOneDirectoryPlusAFewElsewhere) {
  std::vector<std::string> names;
  for (int i = 0; i < 30000; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "dir/%06d.jpg", i);
    names.push_back(buf);
  }
  for (const char* n : {"a", "dir", "dir0", "dir/", "dir/sub/x", "zzz/1", "\xc3\xbf"}) {
    names.push_back(n);
  }
  seed(names);
  ListStats stats = check("", 1000, 16);
  EXPECT_GT(stats.splits, 0u);
  EXPECT_GT(stats.workers, 1);
  check("dir/", 1000, 16);
}

TEST_F(FastListerTest, ParallelEqualsSequentialUnderInjectedFaults) {
  std::vector<std::string> names;
  for (int i = 0; i < 3000; ++i) names.push_back("f/" + std::to_string(i));
  seed(names);
  auto want = expected();
  for (int i = 0; i < 12; ++i) {
    emu_->inject_fault("objects.list", i % 3 == 0 ? emulator::Fault::reset()
                                                  : emulator::Fault::status(i % 2 ? 503 : 429));
  }
  // The store is the one retry layer: give it room for all twelve, which may hit one page.
  auto options = GcsEmulatorTest::options();
  options.retry.max_attempts = 16;
  auto store = make_gcs_store(options);
  ASSERT_TRUE(store.ok());
  ListStats stats;
  Listing parallel = list(**store, "", 8, 100, &stats);
  EXPECT_EQ(rows(parallel), want);
  EXPECT_EQ(emu_->pending_faults("objects.list"), 0u);
  // Every fault cost one more request than the pages received.
  EXPECT_GE(emu_->request_count("objects.list"), stats.pages + 12);
}

// Retries live in one layer, the store's: its RetryOptions mean exactly what they say. A store
// that retries absorbs transient pages; one that does not fails the listing after one request
// per attempt, with no hidden second layer multiplying them.
TEST_F(FastListerTest, TheStoresRetryOptionsAreTheOnlyRetries) {
  std::vector<std::string> names;
  for (int i = 0; i < 500; ++i) names.push_back("r/" + std::to_string(i));
  seed(names);
  ListOptions list_options;
  list_options.workers = 1;
  list_options.page_size = 100;

  auto options = GcsEmulatorTest::options();
  options.retry.max_attempts = 3;
  auto retrying = make_gcs_store(options);
  ASSERT_TRUE(retrying.ok());
  // (Not a reset: curl resends a request whose reused connection was closed under it.)
  emu_->inject_fault("objects.list", emulator::Fault::status(503));
  emu_->inject_fault("objects.list", emulator::Fault::status(429));
  emu_->reset_counters();
  ListStats stats;
  auto listing = list_objects_fast(**retrying, bucket_, "", list_options, &stats);
  ASSERT_TRUE(listing.ok()) << listing.status();
  EXPECT_EQ(rows(*listing), expected());
  EXPECT_EQ(stats.requests, stats.pages);  // the lister asked each page once
  EXPECT_EQ(emu_->request_count("objects.list"), stats.pages + 2);  // the store retried twice

  options.retry.max_attempts = 1;
  auto once = make_gcs_store(options);
  ASSERT_TRUE(once.ok());
  emu_->inject_fault("objects.list", emulator::Fault::status(503));
  emu_->reset_counters();
  auto failed = list_objects_fast(**once, bucket_, "", list_options);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable) << failed.status();
  EXPECT_EQ(emu_->request_count("objects.list"), 1u);
}

TEST_F(FastListerTest, PersistentErrorFailsWithTheBucketInTheMessage) {
  ListOptions options;
  auto missing = list_objects_fast(*store_, "no-such-bucket-x", "p/", options);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), ::testing::HasSubstr("no-such-bucket-x"));

  // A failure in the middle of a parallel listing stops every worker and reports it.
  std::vector<std::string> names;
  for (int i = 0; i < 2000; ++i) names.push_back("e/" + std::to_string(i));
  seed(names);
  for (int i = 0; i < 40; ++i) emu_->inject_fault("objects.list", emulator::Fault::status(403));
  auto forbidden = list_objects_fast(*store_, bucket_, "", options);
  ASSERT_FALSE(forbidden.ok());
  EXPECT_EQ(forbidden.status().code(), absl::StatusCode::kPermissionDenied);
}

// Several prefixes: the fast lister over each, within one worker budget, each object once and
// in name order, with the lister's filters.
TEST_F(FastListerTest, SeveralPrefixesShareOneWorkerBudget) {
  std::vector<std::string> names;
  for (int p = 0; p < 7; ++p) {
    for (int i = 0; i < 250; ++i)
      names.push_back("p" + std::to_string(p) + "/" + std::to_string(i));
    names.push_back("p" + std::to_string(p) + "/dir/");  // a placeholder: skipped
  }
  seed(names);
  ListOptions options;
  options.workers = 3;  // fewer than the prefixes
  options.page_size = 100;
  auto got =
      list_prefixes(*store_, bucket_, {"p6/", "p1/", "p3/", "p1/2", "p0/", "nothing/"}, options);
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<std::string> want;
  for (const auto& n : names) {
    if (n.back() != '/' && (n.rfind("p0/", 0) == 0 || n.rfind("p1/", 0) == 0 ||
                            n.rfind("p3/", 0) == 0 || n.rfind("p6/", 0) == 0)) {
      want.push_back(n);
    }
  }
  std::sort(want.begin(), want.end());
  std::vector<std::string> seen;
  for (const auto& o : *got) {
    seen.push_back(o.name);
    EXPECT_GT(o.generation, 0) << o.name;
    EXPECT_TRUE(o.crc32c.has_value()) << o.name;
  }
  EXPECT_EQ(seen, want);
  options.workers = 0;
  EXPECT_EQ(list_prefixes(*store_, bucket_, {"p0/"}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(FastListerTest, BadOptionsAreRejected) {
  ListOptions options;
  options.workers = 0;
  auto l = list_objects_fast(*store_, bucket_, "", options);
  EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
  options.workers = 4;
  options.page_size = 0;
  l = list_objects_fast(*store_, bucket_, "", options);
  EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(FastListerTest, SmallBucketStaysSequential) {
  std::vector<std::string> names;
  for (int i = 0; i < 100; ++i) names.push_back("s/" + std::to_string(i));
  seed(names);
  ListStats stats;
  Listing l = list(*store_, "", 32, 1000, &stats);
  EXPECT_EQ(rows(l), expected());
  EXPECT_EQ(stats.workers, 1);
  EXPECT_EQ(stats.requests, 1u);
  EXPECT_EQ(stats.splits, 0u);
}

// S3 has no server-side end offset: ranges must stop themselves at their end.
TEST_F(FastListerTest, StoreWithoutServerEndOffset) {
  std::vector<std::string> names;
  for (int i = 0; i < 4000; ++i) names.push_back("n/" + std::to_string(i * 37 % 4000));
  seed(names);
  TweakedStore s3_like(store_);
  s3_like.hide_end_offset = true;
  ASSERT_FALSE(s3_like.capabilities().server_end_offset);
  ListStats stats;
  Listing l = list(s3_like, "", 8, 100, &stats);
  EXPECT_EQ(rows(l), expected());
  EXPECT_GT(stats.splits, 0u);
}

TEST_F(FastListerTest, FiltersPlaceholdersTemporariesClassesAndGlob) {
  seed({"data/", "data/a.jpg", "data/b.png", "data/sub/", "data/sub/c.jpg",
        "dataflux-composed-objects/123", "data/ckpt/dataflux-composed-objects/1",
        "data/ckpt/e.pt.dataflux-part-0123456789abcdef-00001", "data/ckpt/e.pt", "data/cold.jpg",
        "my-dataflux-composed-objects/kept"});
  TweakedStore store(store_);
  store.storage_class = [](const std::string& n) {
    return n == "data/cold.jpg" ? "ARCHIVE" : "STANDARD";
  };
  auto names = [&](const ListOptions& o, const std::string& prefix = "") {
    auto l = list_objects_fast(store, bucket_, prefix, o);
    EXPECT_TRUE(l.ok()) << l.status();
    std::vector<std::string> out;
    if (l.ok()) {
      for (const auto& e : *l) out.emplace_back(e.name);
    }
    return out;
  };
  ListOptions o;
  EXPECT_EQ(names(o),
            (std::vector<std::string>{"data/a.jpg", "data/b.png", "data/ckpt/e.pt", "data/cold.jpg",
                                      "data/sub/c.jpg", "my-dataflux-composed-objects/kept"}));
  o.storage_classes = {"STANDARD"};
  o.glob = "**/*.jpg";
  EXPECT_EQ(names(o, "data/"), (std::vector<std::string>{"data/a.jpg", "data/sub/c.jpg"}));
  o.glob = "*.jpg";  // '*' stays within one segment
  EXPECT_EQ(names(o, "data/"), (std::vector<std::string>{"data/a.jpg"}));
  ListOptions everything;
  everything.skip_directory_placeholders = false;
  everything.skip_temporary_objects = false;
  EXPECT_EQ(names(everything).size(), 11u);
}

TEST_F(FastListerTest, ProgressReportsRunningCounters) {
  std::vector<std::string> names;
  for (int i = 0; i < 2000; ++i) names.push_back("g/" + std::to_string(i));
  seed(names);
  std::vector<ListStats> seen;
  ListOptions options;
  options.workers = 4;
  options.page_size = 100;
  options.progress = [&](const ListStats& s) { seen.push_back(s); };  // never called at once
  ListStats final_stats;
  auto l = list_objects_fast(*store_, bucket_, "", options, &final_stats);
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(seen.size(), final_stats.pages);
  EXPECT_EQ(seen.back().objects, 2000u);
  for (std::size_t i = 1; i < seen.size(); ++i) {
    EXPECT_GE(seen[i].objects, seen[i - 1].objects);
    EXPECT_GE(seen[i].pages, seen[i - 1].pages);
  }
  EXPECT_EQ(final_stats.objects, 2000u);
  EXPECT_GT(final_stats.objects_per_s(), 0.0);
}

TEST(LocalFastListerTest, ParallelEqualsSequentialOnTheFilesystem) {
  char dir_template[] = "/tmp/dataflux-listing-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string root = dir_template;
  auto store = make_local_store(root, LocalOptions{/*fsync=*/false});
  ASSERT_TRUE(store.ok()) << store.status();
  std::vector<std::string> names;
  for (int i = 0; i < 300; ++i) {
    std::string name = "d" + std::to_string(i % 5) + "/f" + std::to_string(i);
    WriteObjectRequest w;
    w.bucket = root;
    w.object = name;
    ASSERT_TRUE((*store)->write_object(w, std::string(i % 5, 'x')).ok());
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  ListOptions options;
  options.page_size = 7;
  for (int workers : {1, 6}) {
    options.workers = workers;
    ListStats stats;
    auto l = list_objects_fast(**store, root, "", options, &stats);
    ASSERT_TRUE(l.ok()) << l.status();
    std::vector<std::string> got;
    for (const auto& e : *l) got.emplace_back(e.name);
    EXPECT_EQ(got, names) << workers;
    EXPECT_EQ(l->source(), "file://" + root);
  }
  std::string cmd = "rm -rf '" + root + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
}

}  // namespace
}  // namespace dataflux::testing
