// The Uploader against the emulator (gs://) and a local directory (file://): exact round trips
// for every strategy, compose trees, bounded memory, atomic publish, cleanup after failures.
#include "dataflux/upload.h"

#include "dataflux/fetch.h"

#include <gmock/gmock.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>

#include "core/retry_policy.h"
#include "engine/upload_parts.h"
#include "engine/upload_test_env.h"

namespace dataflux::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr std::uint64_t kPart = 64 << 10;

UploadOptions small_parts(UploadStrategy strategy = UploadStrategy::kParts, int in_flight = 3) {
  UploadOptions o;
  o.part_size = kPart;
  o.max_parts_in_flight = in_flight;
  o.strategy = strategy;
  return o;
}

class UploadTest : public BackendTest {
 protected:
  std::unique_ptr<Uploader> uploader(const std::string& name, const UploadOptions& options) {
    auto up = Uploader::create(store_, bucket_, name, options);
    EXPECT_TRUE(up.ok()) << up.status();
    return up.ok() ? *std::move(up) : nullptr;
  }

  // Writes `data` in uneven pieces (tiny, one larger than a part, ...) as torch::save does.
  static absl::Status write_uneven(Uploader& up, const std::string& data) {
    const std::size_t steps[] = {30, 14, 7, 3 * kPart + 11, 1000, 16};
    std::size_t at = 0;
    for (int i = 0; at < data.size(); ++i) {
      const std::size_t n = std::min(steps[i % 6], data.size() - at);
      if (auto s = up.write(data.data() + at, n); !s.ok()) return s;
      at += n;
    }
    return absl::OkStatus();
  }

  void round_trip(std::size_t size, const UploadOptions& options, const std::string& method) {
    SCOPED_TRACE("size " + std::to_string(size) + " via " + method);
    const std::string name = "ckpt/rt-" + std::to_string(size) + ".pt";
    const std::string data = random_bytes(size, size + 7);
    auto up = uploader(name, options);
    ASSERT_TRUE(up);
    ASSERT_TRUE(write_uneven(*up, data).ok());
    auto meta = up->commit();
    ASSERT_TRUE(meta.ok()) << meta.status();
    EXPECT_EQ(meta->size, size);
    EXPECT_EQ(up->stats().bytes, size);
    EXPECT_EQ(up->stats().method, method);
    EXPECT_EQ(stored(name), data);
    EXPECT_THAT(all_names(), UnorderedElementsAre(name));
    ASSERT_TRUE(store_->delete_object(delete_request(bucket_, name)).ok());
  }
};

TEST_P(UploadTest, PartsRoundTripExactlyAtEverySize) {
  round_trip(0, small_parts(), "single-request");
  round_trip(1000, small_parts(), "single-request");
  round_trip(kPart - 1, small_parts(), "single-request");
  round_trip(kPart, small_parts(), "compose");
  round_trip(kPart + 1, small_parts(), "compose");
  round_trip(5 * kPart + 123, small_parts(), "compose");
}

TEST_P(UploadTest, AutoAndStreamStrategiesRoundTrip) {
  // Locally kAuto streams into a temporary file renamed into place; on GCS it composes.
  round_trip(5 * kPart + 3, small_parts(UploadStrategy::kAuto), gcs() ? "compose" : "stream");
  round_trip(5 * kPart + 5, small_parts(UploadStrategy::kSingleStream), "stream");
}

TEST_P(UploadTest, MoreThan32PartsComposeAsATree) {
  UploadOptions o = small_parts(UploadStrategy::kParts, 8);
  o.part_size = 16 << 10;
  const std::string data = random_bytes(70 * (16 << 10) + 99, 3);  // 71 parts: depth 2
  auto up = uploader("tree.pt", o);
  ASSERT_TRUE(write_uneven(*up, data).ok());
  auto meta = up->commit();
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(up->stats().parts, 71);
  EXPECT_EQ(stored("tree.pt"), data);
  EXPECT_THAT(all_names(), UnorderedElementsAre("tree.pt"));
  if (gcs()) {
    EXPECT_EQ(emu_->request_count("objects.compose"), 4u);  // 3 groups + the final
  }
}

TEST_P(UploadTest, MemoryIsBoundedByPartsInFlight) {
  UploadOptions o = small_parts(UploadStrategy::kParts, 2);
  auto up = uploader("bounded.pt", o);
  const std::string chunk = random_bytes(1 << 20, 11);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(up->write(chunk.data(), chunk.size()).ok());
  ASSERT_TRUE(up->commit().ok());
  const UploadStats s = up->stats();
  EXPECT_EQ(s.parts, 32);
  EXPECT_GT(s.peak_buffered_bytes, 0u);
  EXPECT_LE(s.peak_buffered_bytes, 2 * kPart);
  EXPECT_LE(s.peak_parts_in_flight, 2);
  EXPECT_EQ(stored("bounded.pt"), chunk + chunk);
}

// stats() may be read from another thread (a progress reporter) while the writer writes and
// parts upload; under TSan this is where an unsynchronised counter shows.
TEST_P(UploadTest, StatsCanBeReadFromAnotherThreadWhileWriting) {
  for (UploadStrategy strategy : {UploadStrategy::kParts, UploadStrategy::kSingleStream}) {
    auto up = uploader("watched.pt", small_parts(strategy, 2));
    ASSERT_TRUE(up);
    std::atomic<bool> stop{false};
    std::uint64_t last = 0;
    bool monotonic = true;
    std::thread watcher([&] {
      while (!stop.load()) {
        const std::uint64_t now = up->stats().bytes;
        monotonic = monotonic && now >= last;
        last = now;
      }
    });
    const std::string data = random_bytes(8 * kPart + 5, 21);
    const absl::Status written = write_uneven(*up, data);
    auto meta = up->commit();
    stop = true;
    watcher.join();
    ASSERT_TRUE(written.ok()) << written;
    ASSERT_TRUE(meta.ok()) << meta.status();
    EXPECT_TRUE(monotonic);
    EXPECT_EQ(up->stats().bytes, data.size());
    EXPECT_EQ(stored("watched.pt"), data);
  }
}

TEST_P(UploadTest, GrowingPartSizesKeepOffsetsRight) {
  UploadOptions o = small_parts();
  o.part_size_growth_every = 2;  // 64, 64, 128, 128, 256 KiB, ...
  const std::string data = random_bytes(900 << 10, 5);
  auto up = uploader("grow.pt", o);
  ASSERT_TRUE(write_uneven(*up, data).ok());
  ASSERT_TRUE(up->commit().ok());
  EXPECT_EQ(up->stats().parts, 7);  // 64+64+128+128+256+256 = 896 KiB, then the 4 KiB rest
  EXPECT_EQ(stored("grow.pt"), data);
}

TEST_P(UploadTest, DestroyedWithoutCommitLeavesNothing) {
  {
    auto up = uploader("dropped.pt", small_parts());
    ASSERT_TRUE(up->write(random_bytes(10 * kPart, 1).data(), 10 * kPart).ok());
  }
  {
    auto up = uploader("dropped-stream.pt", small_parts(UploadStrategy::kSingleStream));
    ASSERT_TRUE(up->write(random_bytes(3 * kPart, 1).data(), 3 * kPart).ok());
  }
  EXPECT_THAT(all_names(), ::testing::IsEmpty());
}

TEST_P(UploadTest, AbortLeavesNothingAndLaterCallsFail) {
  auto up = uploader("aborted.pt", small_parts());
  ASSERT_TRUE(up->write(random_bytes(4 * kPart, 1).data(), 4 * kPart).ok());
  EXPECT_TRUE(up->abort().ok());
  EXPECT_TRUE(up->abort().ok());
  EXPECT_EQ(up->write("x", 1).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(up->commit().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(all_names(), ::testing::IsEmpty());
}

TEST_P(UploadTest, ReplacesAnExistingObjectAndHonoursPreconditions) {
  round_trip(2 * kPart, small_parts(), "compose");
  const std::string old_data = random_bytes(100, 1);
  WriteObjectRequest w;
  w.bucket = bucket_;
  w.object = "keep.pt";
  ASSERT_TRUE(store_->write_object(w, old_data).ok());
  for (std::size_t size : {std::size_t{10}, 3 * kPart}) {
    UploadOptions o = small_parts();
    o.if_generation_match = 0;  // must not exist: it does
    auto up = uploader("keep.pt", o);
    ASSERT_TRUE(up->write(random_bytes(size, 2).data(), size).ok());
    EXPECT_EQ(up->commit().status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(stored("keep.pt"), old_data);
    EXPECT_THAT(all_names(), UnorderedElementsAre("keep.pt"));
  }
  const std::string new_data = random_bytes(3 * kPart, 9);
  auto up = uploader("keep.pt", small_parts());
  ASSERT_TRUE(up->write(new_data.data(), new_data.size()).ok());
  ASSERT_TRUE(up->commit().ok());
  EXPECT_EQ(stored("keep.pt"), new_data);
}

TEST_P(UploadTest, RejectsReservedAndEmptyNames) {
  EXPECT_EQ(Uploader::create(store_, bucket_, "a.dataflux-part-x", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Uploader::create(store_, bucket_, "dir/", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Uploader::create(nullptr, bucket_, "x", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Backends, UploadTest, ::testing::Values("gcs", "local"),
                         [](const auto& info) { return info.param; });

// Faults need the emulator.
class UploadFaultTest : public UploadTest {};

TEST_P(UploadFaultTest, TransientPartFailuresAreRetriedAndTheResultIsExact) {
  using emulator::Fault;
  emu_->inject_fault("objects.insert", Fault::status(503));
  emu_->inject_fault("objects.insert", Fault::reset());
  emu_->inject_fault("objects.insert", Fault::break_after(10));  // stored, reply cut short
  emu_->inject_fault("objects.insert", Fault::status(429));
  emu_->inject_fault("objects.compose", Fault::status(503));
  const std::string data = random_bytes(8 * kPart + 5, 21);
  auto up = uploader("faulty.pt", small_parts());
  ASSERT_TRUE(write_uneven(*up, data).ok());
  auto meta = up->commit();
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(emu_->pending_faults("objects.insert"), 0u);
  EXPECT_EQ(emu_->pending_faults("objects.compose"), 0u);
  EXPECT_EQ(stored("faulty.pt"), data);
  EXPECT_THAT(all_names(), UnorderedElementsAre("faulty.pt"));
}

// Every compose of a tree upload has its reply lost after GCS applied it: the retries meet
// their own earlier copies (412 to ifGenerationMatch) and take them as done, so the upload
// completes exactly and leaves no temporary behind, with or without the caller's precondition.
TEST_P(UploadFaultTest, ComposesWhoseRepliesWereLostComplete) {
  for (bool conditional : {false, true}) {
    UploadOptions o = small_parts(UploadStrategy::kParts, 8);
    o.part_size = 16 << 10;
    if (conditional) o.if_generation_match = 0;
    const std::string name = conditional ? "lost-if-absent.pt" : "lost.pt";
    const std::string data = random_bytes(70 * (16 << 10) + 99, 5);  // 71 parts: depth 2
    for (int i = 0; i < 4; ++i)
      emu_->inject_fault("objects.compose", emulator::Fault::lost_reply());
    auto up = uploader(name, o);
    ASSERT_TRUE(write_uneven(*up, data).ok());
    auto meta = up->commit();
    ASSERT_TRUE(meta.ok()) << meta.status();
    EXPECT_EQ(emu_->pending_faults("objects.compose"), 0u);
    EXPECT_EQ(stored(name), data);
  }
  EXPECT_THAT(all_names(), UnorderedElementsAre("lost.pt", "lost-if-absent.pt"));
}

TEST_P(UploadFaultTest, ASmallCheckpointIsOneRetriedRequest) {
  emu_->inject_fault("objects.insert", emulator::Fault::status(503));
  emu_->inject_fault("objects.insert", emulator::Fault::break_after(5));
  const std::string data = random_bytes(1000, 4);
  auto up = uploader("small.pt", small_parts());
  ASSERT_TRUE(up->write(data.data(), data.size()).ok());
  auto meta = up->commit();
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(stored("small.pt"), data);
  EXPECT_EQ(emu_->request_count("objects.insert"), 3u);
}

TEST_P(UploadFaultTest, APermanentFailureNamesThePartAndLeavesNothing) {
  emu_->inject_fault("objects.insert", emulator::Fault::status(403));
  auto up = uploader("denied.pt", small_parts());
  absl::Status s = write_uneven(*up, random_bytes(12 * kPart, 8));
  auto meta = up->commit();
  ASSERT_FALSE(meta.ok());
  EXPECT_EQ(meta.status().code(), absl::StatusCode::kPermissionDenied) << meta.status();
  EXPECT_THAT(std::string(meta.status().message()),
              HasSubstr("upload gs://" + bucket_ + "/denied.pt: part "));
  EXPECT_THAT(std::string(meta.status().message()), HasSubstr("403"));
  EXPECT_THAT(all_names(), ::testing::IsEmpty());
}

TEST_P(UploadFaultTest, RetriesThatRunOutFailTheUploadAndCleanUp) {
  for (int i = 0; i < 6; ++i) emu_->inject_fault("objects.compose", emulator::Fault::status(503));
  emu_->inject_fault("objects.delete", emulator::Fault::status(503));  // cleanup retries too
  emu_->inject_fault("objects.delete", emulator::Fault::reset());
  auto up = uploader("unavailable.pt", small_parts());
  ASSERT_TRUE(write_uneven(*up, random_bytes(4 * kPart, 8)).ok());
  auto meta = up->commit();
  ASSERT_FALSE(meta.ok());
  EXPECT_EQ(meta.status().code(), absl::StatusCode::kUnavailable) << meta.status();
  EXPECT_THAT(std::string(meta.status().message()), HasSubstr("final compose"));
  EXPECT_THAT(all_names(), ::testing::IsEmpty());
  EXPECT_EQ(up->stats().leaked_parts, 0);
}

// An upload dropped while the server has gone silent: its destructor gives up on the deletes
// once the destructor budget is spent, instead of waiting as long as the store's options allow
// (here: patient ones, 10 minutes, past ctest's limit), and what it left is cleanup's.
TEST_P(UploadFaultTest, ADestructorWhileTheServerIsSilentReturnsAndLeavesCleanupTheRest) {
  GcsOptions patient;
  patient.endpoint = emu_->endpoint();
  patient.anonymous = true;
  patient.retry.deadline = std::chrono::minutes(10);
  patient.transport.stall_timeout = std::chrono::minutes(10);
  auto store = make_gcs_store(patient);
  ASSERT_TRUE(store.ok()) << store.status();
  internal::set_destructor_budget_for_testing(absl::Milliseconds(500));
  {
    // Parts upload in the background: wait until the server has stored one, so that there is
    // something for the destructor to fail to delete (under load, the destructor could
    // otherwise cancel every part before any reached the server).
    auto stored = std::make_shared<std::promise<void>>();
    emu_->after_next("objects.insert", [stored] { stored->set_value(); });
    auto up = Uploader::create(*store, bucket_, "silent.pt", small_parts());
    ASSERT_TRUE(up.ok()) << up.status();
    ASSERT_TRUE((*up)->write(random_bytes(6 * kPart, 3).data(), 6 * kPart).ok());
    ASSERT_EQ(stored->get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
    // Every delete now meets a server that holds it, unapplied, for 10 minutes. (A stall would
    // apply the delete and withhold only the reply: what is left would then depend on how
    // many deletes went out before the budget ran out.)
    for (int i = 0; i < 8; ++i) {
      emu_->inject_fault("objects.delete", emulator::Fault::hang(absl::Minutes(10)));
    }
  }
  internal::set_destructor_budget_for_testing(absl::Seconds(10));
  emu_->clear_faults();
  EXPECT_FALSE(all_names().empty());  // the parts it could not delete
  CleanupOptions options;
  options.min_age = std::chrono::seconds(0);
  auto removed = cleanup(*store_, bucket_, options);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_THAT(all_names(), ::testing::IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(Gcs, UploadFaultTest, ::testing::Values("gcs"),
                         [](const auto& info) { return info.param; });

TEST(UploadPartSize, GrowsAndRespectsLimits) {
  UploadOptions o;
  o.part_size = 8 << 20;
  o.part_size_growth_every = 1000;
  StoreCapabilities caps;
  EXPECT_EQ(upload_part_size(o, caps, 1), 8u << 20);
  EXPECT_EQ(upload_part_size(o, caps, 1000), 8u << 20);
  EXPECT_EQ(upload_part_size(o, caps, 1001), 16u << 20);
  EXPECT_EQ(upload_part_size(o, caps, 3001), 64u << 20);
  caps.min_part_size = 16 << 20;  // S3-like floor
  EXPECT_EQ(upload_part_size(o, caps, 1), 16u << 20);
  o.expected_size = 400ull << 30;  // 400 GiB in <= 10,000 parts
  EXPECT_GE(upload_part_size(o, caps, 1) * 10000, 400ull << 30);
  o.max_part_size = 64 << 20;
  o.expected_size.reset();
  EXPECT_EQ(upload_part_size(o, caps, 9000), 64u << 20);
  // Whatever the schedule, 10,000 parts starting at 32 MiB hold far more than 5 TiB.
  UploadOptions d;
  std::uint64_t total = 0;
  for (int n = 1; n <= 10000; ++n) total += upload_part_size(d, caps, n);
  EXPECT_GT(total, 5ull << 40);
}

}  // namespace
}  // namespace dataflux::testing
