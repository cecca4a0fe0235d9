// Compose batches on GCS (the emulator): batching rules, verified slices, every composite
// deleted, fall-back to direct reads, and cleanup().
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "engine/fetcher_internal.h"
#include "fetcher_test_env.h"

namespace dataflux::testing {
namespace {

using emulator::Fault;
using ::testing::HasSubstr;

std::vector<FetchTarget> sized(const std::vector<std::uint64_t>& sizes) {
  std::vector<FetchTarget> out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    FetchTarget t;
    t.object.name = "o" + std::to_string(i);
    t.object.size = sizes[i];
    out.push_back(t);
  }
  return out;
}

class ComposeTest : public StoreTest {
 protected:
  struct Fetched {
    std::vector<std::string> data;
    absl::Status status;
  };
  Fetched fetch_all(Fetcher& fetcher, const std::vector<ObjectEntry>& objects) {
    Fetched f;
    f.data.resize(objects.size());
    std::vector<FetchTarget> targets;
    for (std::size_t i = 0; i < objects.size(); ++i) {
      f.data[i].assign(objects[i].size, '\0');
      targets.push_back({objects[i], f.data[i].data()});
    }
    f.status = fetcher.fetch(targets);
    return f;
  }
  FetchOptions forced() {
    FetchOptions options;
    options.force_compose = true;
    return options;
  }
};

TEST_P(ComposeTest, PlanNeverExceedsTheByteCapOrThirtyTwoSources) {
  FetchOptions options = forced();
  options.max_composite_object_size = 1000;
  internal::FetcherImpl impl(store_, bucket_, options);
  // 2000 > cap and 0-byte objects are read directly; 400+400 fits, a third 400 does not.
  auto batches = impl.plan_compose_batches(sized({400, 400, 400, 2000, 0, 300, 300}));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(batches[1], (std::vector<std::size_t>{2, 5, 6}));

  options.max_composite_object_size = 100'000'000;
  internal::FetcherImpl wide(store_, bucket_, options);
  auto many = wide.plan_compose_batches(sized(std::vector<std::uint64_t>(70, 10)));
  ASSERT_EQ(many.size(), 3u);
  EXPECT_EQ(many[0].size(), 32u);
  EXPECT_EQ(many[1].size(), 32u);
  EXPECT_EQ(many[2].size(), 6u);
}

TEST_P(ComposeTest, PlanComposesOnlyWhenItPaysOrIsAllowed) {
  FetchOptions options;  // not forced: pays only beyond max_requests_in_flight
  options.max_requests_in_flight = 16;
  internal::FetcherImpl impl(store_, bucket_, options);
  EXPECT_TRUE(impl.plan_compose_batches(sized(std::vector<std::uint64_t>(16, 10))).empty());
  EXPECT_FALSE(impl.plan_compose_batches(sized(std::vector<std::uint64_t>(40, 10))).empty());
  // Large objects stream better alone, whatever the count.
  EXPECT_TRUE(impl.plan_compose_batches(sized(std::vector<std::uint64_t>(40, 4 << 20))).empty());

  options.max_composite_object_size = 0;  // the Python spelling of "off"
  internal::FetcherImpl off(store_, bucket_, options);
  EXPECT_TRUE(off.plan_compose_batches(sized(std::vector<std::uint64_t>(40, 10))).empty());
  options.max_composite_object_size = 1000;
  options.disable_compose = true;
  internal::FetcherImpl disabled(store_, bucket_, options);
  EXPECT_TRUE(disabled.plan_compose_batches(sized(std::vector<std::uint64_t>(40, 10))).empty());
}

TEST_P(ComposeTest, ComposedFetchIsByteExactAndLeavesNoComposite) {
  auto data = put_many("small/", 80, 3000, 5);
  Fetcher fetcher(store_, bucket_, forced());
  auto f = fetch_all(fetcher, list("small/"));
  ASSERT_TRUE(f.status.ok()) << f.status;
  EXPECT_EQ(f.data, data);
  FetchStats stats = fetcher.stats();
  EXPECT_GE(stats.composes, 3u);  // 80 objects, at most 32 a batch
  EXPECT_GT(stats.composed_objects, 60u);
  EXPECT_EQ(stats.composites_deleted, stats.composes);
  EXPECT_EQ(stats.composites_leaked, 0u);
  EXPECT_EQ(emu_->request_count("objects.compose"), stats.composes);
  EXPECT_TRUE(composites().empty());
}

TEST_P(ComposeTest, ComposeRefusedFallsBackToDirectReadsAndStopsTrying) {
  auto data = put_many("ro/", 40, 2000, 6);
  emu_->inject_fault("objects.compose", Fault::status(403));
  Fetcher fetcher(store_, bucket_, forced());
  auto objects = list("ro/");
  auto f = fetch_all(fetcher, objects);
  ASSERT_TRUE(f.status.ok()) << f.status;
  EXPECT_EQ(f.data, data);
  EXPECT_GE(fetcher.stats().compose_fallbacks, 1u);
  const auto asked = emu_->request_count("objects.compose");
  auto again = fetch_all(fetcher, objects);
  ASSERT_TRUE(again.status.ok());
  EXPECT_EQ(again.data, data);
  // The refusal was remembered: the second fetch did not ask again.
  EXPECT_EQ(emu_->request_count("objects.compose"), asked);
  EXPECT_TRUE(composites().empty());
}

// A compose applied whose reply was lost: the re-send (ifGenerationMatch=0) meets its own
// composite and gets a 412. That composite is used and deleted, never leaked; with the retry
// budget spent after the lost reply, it is deleted all the same.
TEST_P(ComposeTest, ACompositeWhoseReplyWasLostIsUsedAndDeleted) {
  auto data = put_many("lost/", 20, 3000, 9);
  emu_->inject_fault("objects.compose", Fault::lost_reply());
  Fetcher fetcher(store_, bucket_, forced());
  auto objects = list("lost/");
  auto f = fetch_all(fetcher, objects);
  ASSERT_TRUE(f.status.ok()) << f.status;
  EXPECT_EQ(f.data, data);
  EXPECT_EQ(fetcher.stats().compose_fallbacks, 0u);
  EXPECT_TRUE(composites().empty());

  emu_->inject_fault("objects.compose", Fault::lost_reply());
  for (int k = 0; k < 10; ++k) emu_->inject_fault("objects.compose", Fault::status(503));
  auto again = fetch_all(fetcher, objects);
  ASSERT_TRUE(again.status.ok()) << again.status;
  EXPECT_EQ(again.data, data);
  EXPECT_TRUE(composites().empty());
  emu_->clear_faults();
}

TEST_P(ComposeTest, BrokenCompositeStreamResumesAndIsStillDeleted) {
  auto data = put_many("brk/", 30, 4000, 7);
  emu_->inject_fault("objects.media", Fault::break_after(5000));
  emu_->inject_fault("objects.media", Fault::status(503));
  Fetcher fetcher(store_, bucket_, forced());
  auto f = fetch_all(fetcher, list("brk/"));
  ASSERT_TRUE(f.status.ok()) << f.status;
  EXPECT_EQ(f.data, data);
  EXPECT_TRUE(composites().empty());
}

TEST_P(ComposeTest, FailedCompositeReadFallsBackAndDeletesTheComposite) {
  auto data = put_many("fail/", 10, 4000, 8);
  for (int k = 0; k < 6; ++k) emu_->inject_fault("objects.media", Fault::status(500));
  Fetcher fetcher(store_, bucket_, forced());
  auto f = fetch_all(fetcher, list("fail/"));
  ASSERT_TRUE(f.status.ok()) << f.status;
  EXPECT_EQ(f.data, data);
  EXPECT_GE(fetcher.stats().compose_fallbacks, 1u);
  EXPECT_EQ(fetcher.stats().composites_deleted, fetcher.stats().composes);
  EXPECT_TRUE(composites().empty());
}

TEST_P(ComposeTest, StaleListingIsCaughtNotSilentlyMisSliced) {
  auto data = put_many("stale/", 10, 1000, 9);
  auto objects = list("stale/");
  put("stale/00003", "overwritten with a different length");
  Fetcher fetcher(store_, bucket_, forced());
  auto f = fetch_all(fetcher, objects);
  // The pinned generation is gone: compose fails, the direct read of that object fails and
  // names it; the others still arrive intact.
  ASSERT_FALSE(f.status.ok());
  EXPECT_THAT(std::string(f.status.message()), HasSubstr("stale/00003"));
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (i != 3) {
      EXPECT_EQ(f.data[i], data[i]) << i;
    }
  }
  EXPECT_TRUE(composites().empty());
}

TEST_P(ComposeTest, SliceWithAWrongChecksumIsRejected) {
  auto data = put_many("crc/", 8, 1000, 10);
  auto objects = list("crc/");
  ASSERT_TRUE(objects[2].crc32c.has_value());
  *objects[2].crc32c ^= 1;  // the listing and the bytes disagree
  Fetcher fetcher(store_, bucket_, forced());
  auto f = fetch_all(fetcher, objects);
  ASSERT_FALSE(f.status.ok());
  EXPECT_EQ(f.status.code(), absl::StatusCode::kDataLoss) << f.status;
  EXPECT_THAT(std::string(f.status.message()), HasSubstr("crc/00002"));
  EXPECT_EQ(fetcher.stats().slice_mismatches, 1u);
  EXPECT_TRUE(composites().empty());
}

TEST_P(ComposeTest, CleanupDeletesOnlyLeftoverComposites) {
  put(std::string(kComposedObjectsPrefix) + "a", "x");
  put(std::string(kComposedObjectsPrefix) + "b", "y");
  put("keep/me", "z");
  // By default temporaries younger than an hour are spared: a running job may own them.
  EXPECT_EQ(cleanup(*store_, bucket_).value(), 0u);
  CleanupOptions now;
  now.min_age = std::chrono::seconds(0);
  auto deleted = cleanup(*store_, bucket_, now);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 2u);
  EXPECT_TRUE(composites().empty());
  EXPECT_EQ(list("keep/").size(), 1u);
  CleanupOptions young;
  young.min_age = std::chrono::hours(1);
  put(std::string(kComposedObjectsPrefix) + "fresh", "x");
  EXPECT_EQ(cleanup(*store_, bucket_, young).value(), 0u);  // too young: a job may be using it
}

TEST_P(ComposeTest, CleanupAlsoDeletesCheckpointPartsWithinThePrefix) {
  const std::string composite = std::string(kComposedObjectsPrefix) + "a";
  put(composite, "x");
  put("ckpt/m.pt.dataflux-part-0123456789abcdef-00001", "p");
  put("other/n.pt.dataflux-part-0123456789abcdef-00002", "p");
  put("ckpt/m.pt", "final");

  CleanupOptions dry;
  dry.min_age = std::chrono::seconds(0);
  dry.dry_run = true;
  std::vector<std::string> reported;
  dry.on_delete = [&](const ObjectMetadata& o) { reported.push_back(o.name); };
  EXPECT_EQ(cleanup(*store_, bucket_, dry).value(), 3u);
  EXPECT_EQ(reported.size(), 3u);
  EXPECT_EQ(stored("ckpt/").size(), 2u);  // nothing deleted

  CleanupOptions only_ckpt = dry;
  only_ckpt.dry_run = false;
  only_ckpt.on_delete = nullptr;
  only_ckpt.prefix = "ckpt/";
  EXPECT_EQ(cleanup(*store_, bucket_, only_ckpt).value(), 1u);
  EXPECT_EQ(stored("ckpt/").size(), 1u);   // the checkpoint itself stays
  EXPECT_EQ(stored("other/").size(), 1u);  // outside the prefix
  EXPECT_EQ(composites().size(), 1u);      // at the root, outside the prefix

  CleanupOptions composites_only = only_ckpt;
  composites_only.prefix.clear();
  composites_only.upload_parts = false;
  EXPECT_EQ(cleanup(*store_, bucket_, composites_only).value(), 1u);
  EXPECT_TRUE(composites().empty());
  EXPECT_EQ(stored("other/").size(), 1u);
  CleanupOptions everything = composites_only;
  everything.upload_parts = true;
  EXPECT_EQ(cleanup(*store_, bucket_, everything).value(), 1u);  // both kinds, everywhere
  EXPECT_TRUE(stored("other/").empty());
}

TEST_P(ComposeTest, UniqueNamesLiveUnderThePrefix) {
  std::string a = internal::unique_composite_name(), b = internal::unique_composite_name();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind(kComposedObjectsPrefix, 0), 0u);
  EXPECT_EQ(a.size(), std::string(kComposedObjectsPrefix).size() + 36);
}

TEST_P(ComposeTest, ForkedChildComposesOnItsOwnThreads) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "TSan cannot start threads in the child of a multi-threaded fork()";
#endif
  auto data = put_many("f/", 12, 3000);
  auto objects = list("f/");
  {
    Fetcher parent(store_, bucket_, forced());  // the compose pool's threads start here
    auto f = fetch_all(parent, objects);
    ASSERT_TRUE(f.status.ok()) << f.status;
    ASSERT_GT(parent.stats().composes, 0u);
  }
  const std::string endpoint = emu_->endpoint();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The parent's pool threads do not exist here: a batch queued to them would never run.
    ::alarm(20);  // a hang ends the child with SIGALRM, which the parent reports
    GcsOptions options;
    options.endpoint = endpoint;
    options.anonymous = true;
    auto store = make_gcs_store(options);
    if (!store.ok()) ::_exit(2);
    Fetcher child(*store, bucket_, forced());
    auto f = fetch_all(child, objects);
    ::_exit(f.status.ok() && f.data == data && child.stats().composes > 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_FALSE(WIFSIGNALED(status))
      << "the child's compose fetch never finished (signal " << WTERMSIG(status) << ")";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(composites().empty());
}

INSTANTIATE_TEST_SUITE_P(Gcs, ComposeTest, ::testing::Values("gcs"));

}  // namespace
}  // namespace dataflux::testing
