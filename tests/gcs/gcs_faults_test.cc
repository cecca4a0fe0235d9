// Every fault kind the emulator injects, and the retry rules: what is retried, how reads resume,
// what is never retried.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "dataflux/crc32c.h"
#include "dataflux/log.h"
#include "gcs_test_env.h"

namespace dataflux::testing {
namespace {

using emulator::Fault;
using ::testing::HasSubstr;

class GcsFaultsTest : public GcsEmulatorTest {};

TEST_F(GcsFaultsTest, ReadRetriesAfter503s) {
  std::string data = random_bytes(100000, 1);
  seed_object("obj", data);
  emu_->inject_fault("objects.media", Fault::status(503));
  emu_->inject_fault("objects.media", Fault::status(503));
  std::string buffer(data.size(), '\0');
  auto result = store_->read_object(read_request(bucket_, "obj"), buffer.data(), buffer.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(buffer, data);
  EXPECT_EQ(result->attempts, 3);
  EXPECT_EQ(emu_->request_count("objects.media"), 3u);
}

// Retries and resumes are visible through the log hook, with the URL, the attempt and the
// cause, and never the token that authorized the request.
TEST_F(GcsFaultsTest, RetriesAndResumesAreLoggedWithoutSecrets) {
  struct Record {
    LogLevel level;
    std::string message;
  };
  std::mutex mu;
  std::vector<Record> records;
  set_log_sink([&](LogLevel level, std::string_view message) {
    std::lock_guard<std::mutex> lock(mu);
    records.push_back({level, std::string(message)});
  });
  set_log_level(LogLevel::kInfo);
  std::string data = random_bytes(200000, 9);
  seed_object("logged", data);
  GcsOptions options = this->options();
  options.anonymous = false;
  options.credentials = make_access_token_credentials("tok-SECRET-42");
  auto store = make_gcs_store(options).value();
  emu_->inject_fault("objects.media", Fault::status(503));
  emu_->inject_fault("objects.media", Fault::break_after(64 << 10));
  std::string buffer(data.size(), '\0');
  auto result = store->read_object(read_request(bucket_, "logged"), buffer.data(), buffer.size());
  set_log_sink(nullptr);
  set_log_level(LogLevel::kWarning);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(buffer, data);

  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(records.size(), 3u);
  bool retry_503 = false, resume = false;
  for (const auto& r : records) {
    EXPECT_THAT(r.message, ::testing::Not(HasSubstr("tok-SECRET-42")));
    if (r.level == LogLevel::kWarning && absl::StrContains(r.message, "retry 2/5") &&
        absl::StrContains(r.message, "gs://" + bucket_ + "/logged") &&
        absl::StrContains(r.message, "503")) {
      retry_503 = true;
    }
    if (r.level == LogLevel::kInfo && absl::StrContains(r.message, "resuming at byte 65536")) {
      resume = true;
    }
  }
  EXPECT_TRUE(retry_503);
  EXPECT_TRUE(resume);
}

TEST_F(GcsFaultsTest, LogLevelOffAndErrorKeepRetriesQuiet) {
  std::atomic<int> records{0};
  set_log_sink([&](LogLevel, std::string_view) { ++records; });
  set_log_level(LogLevel::kError);
  seed_object("quiet", "abc");
  emu_->inject_fault("objects.media", Fault::status(503));
  char buf[3];
  EXPECT_TRUE(store_->read_object(read_request(bucket_, "quiet"), buf, sizeof(buf)).ok());
  set_log_sink(nullptr);
  set_log_level(LogLevel::kWarning);
  EXPECT_EQ(records.load(), 0);
  EXPECT_EQ(emu_->request_count("objects.media"), 2u);
}

// A server (or proxy) that stores other bytes than were sent and does not check the caller's
// CRC32C (real GCS rejects the write; the client must not depend on that): DataLoss, and no
// object is left under the name, whether written in one request or as a resumable session.
TEST_F(GcsFaultsTest, AWriteStoredWithAnotherChecksumLeavesNoObject) {
  const std::string data = random_bytes(5000, 17);
  emu_->inject_fault("objects.insert", Fault::corrupt_upload());
  auto written = store_->write_object(write_request(bucket_, "damaged"), data);
  EXPECT_EQ(written.status().code(), absl::StatusCode::kDataLoss) << written.status();
  EXPECT_THAT(std::string(written.status().message()), HasSubstr("the object was deleted"));
  EXPECT_EQ(store_->get_object_metadata(bucket_, "damaged").status().code(),
            absl::StatusCode::kNotFound);

  auto session = store_->start_resumable_write(write_request(bucket_, "damaged-session"));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->write(data).ok());
  emu_->inject_fault("objects.upload", Fault::corrupt_upload());  // the one chunk, at finish
  auto finished = (*session)->finish();
  EXPECT_EQ(finished.status().code(), absl::StatusCode::kDataLoss) << finished.status();
  EXPECT_THAT(std::string(finished.status().message()), HasSubstr("the object was deleted"));
  EXPECT_EQ(store_->get_object_metadata(bucket_, "damaged-session").status().code(),
            absl::StatusCode::kNotFound);
}

// The server applied the write and the reply was lost. With a precondition the write is
// retried and meets a 412 from its own first copy: that is success, not an error. Without
// one it is sent once: the caller hears the failure and no second copy is made.
TEST_F(GcsFaultsTest, AConditionalWriteWhoseReplyWasLostSucceeds) {
  const std::string data = random_bytes(3000, 23);
  emu_->inject_fault("objects.insert", Fault::lost_reply());
  WriteObjectRequest create = write_request(bucket_, "once");
  create.if_generation_match = 0;
  auto written = store_->write_object(create, data);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->size, data.size());
  EXPECT_EQ(emu_->request_count("objects.insert"), 2u);
  EXPECT_EQ(emu_->get_object_data(bucket_, "once").value(), data);

  // Someone else's object under the name is still a precondition failure.
  create.object = "taken";
  seed_object("taken", "another writer's bytes");
  EXPECT_EQ(store_->write_object(create, data).status().code(),
            absl::StatusCode::kFailedPrecondition);

  emu_->inject_fault("objects.insert", Fault::lost_reply());
  auto unconditional = store_->write_object(write_request(bucket_, "plain"), data);
  EXPECT_FALSE(unconditional.ok());
  EXPECT_EQ(emu_->request_count("objects.insert"), 4u);  // sent once, not replayed
}

TEST_F(GcsFaultsTest, SinkReadRetriesAfter503WithoutLeakingTheErrorBody) {
  std::string data = random_bytes(100000, 2);
  seed_object("obj", data);
  emu_->inject_fault("objects.media", Fault::status(503));
  std::string got;
  auto result =
      store_->read_object(read_request(bucket_, "obj"), [&](const char* p, std::size_t n) {
        got.append(p, n);
        return absl::OkStatus();
      });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(got, data);
  EXPECT_EQ(result->attempts, 2);
}

TEST_F(GcsFaultsTest, ReadRetriesAfterReset) {
  std::string data = random_bytes(100000, 3);
  seed_object("obj", data);
  emu_->inject_fault("objects.media", Fault::reset());
  std::string buffer(data.size(), '\0');
  auto result = store_->read_object(read_request(bucket_, "obj"), buffer.data(), buffer.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(buffer, data);
  // curl itself retries once when a reused connection dies before any response byte, so the
  // second request may not be ours; either way exactly one more request reached the server.
  EXPECT_GE(result->attempts, 1);
  EXPECT_LE(result->attempts, 2);
  EXPECT_EQ(emu_->request_count("objects.media"), 2u);
}

TEST_F(GcsFaultsTest, BrokenStreamResumesFromTheLastByte) {
  std::string data = random_bytes(1 << 20, 4);
  seed_object("obj", data);
  emu_->inject_fault("objects.media", Fault::break_after(64 << 10));
  std::string buffer(data.size(), '\0');
  auto result = store_->read_object(read_request(bucket_, "obj"), buffer.data(), buffer.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(buffer, data);
  EXPECT_TRUE(result->crc32c_verified);
  EXPECT_EQ(result->bytes, data.size());
  EXPECT_EQ(result->attempts, 2);
  EXPECT_EQ(emu_->request_count("objects.media"), 2u);
}

TEST_F(GcsFaultsTest, BrokenStreamToSinkNeverRepeatsBytes) {
  std::string data = random_bytes(1 << 20, 5);
  seed_object("obj", data);
  emu_->inject_fault("objects.media", Fault::break_after(64 << 10));
  emu_->inject_fault("objects.media", Fault::break_after(100000));
  std::string got;
  auto result =
      store_->read_object(read_request(bucket_, "obj"), [&](const char* p, std::size_t n) {
        got.append(p, n);
        return absl::OkStatus();
      });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(got.size(), data.size());
  EXPECT_EQ(got, data);
  EXPECT_TRUE(result->crc32c_verified);
  EXPECT_EQ(result->attempts, 3);
}

TEST_F(GcsFaultsTest, BrokenRangedReadResumesInsideTheRange) {
  std::string data = random_bytes(1 << 20, 6);
  seed_object("obj", data);
  emu_->inject_fault("objects.media", Fault::break_after(10000));
  ReadObjectRequest request = read_request(bucket_, "obj");
  request.offset = 300000;
  request.length = 500000;
  std::string buffer(500000, '\0');
  auto result = store_->read_object(request, buffer.data(), buffer.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(buffer, data.substr(300000, 500000));
  EXPECT_EQ(result->attempts, 2);
}

TEST_F(GcsFaultsTest, ResumeIsPinnedToTheFirstGeneration) {
  std::string v1 = random_bytes(1 << 20, 7);
  seed_object("obj", v1);
  emu_->inject_fault("objects.media", Fault::stall(absl::Milliseconds(300), 64 << 10));
  GcsOptions options = this->options();
  options.transport.stall_timeout = std::chrono::milliseconds(100);
  auto store = make_gcs_store(options).value();
  // Overwrite the object once the first attempt has delivered bytes (so its generation is
  // pinned), while it stalls. The resume asks for the generation it started with, which no
  // longer exists (no versioning): the read fails cleanly instead of splicing bytes of two
  // different objects.
  std::string got;
  bool overwritten = false;
  auto result = store->read_object(read_request(bucket_, "obj"), [&](const char* p, std::size_t n) {
    got.append(p, n);
    if (!overwritten) {
      overwritten = true;
      seed_object("obj", random_bytes(1 << 20, 8));
    }
    return absl::OkStatus();
  });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound) << result.status();
  EXPECT_EQ(emu_->request_count("objects.media"), 2u);
  ASSERT_EQ(got.size(), std::size_t{64 << 10});
  EXPECT_TRUE(got == v1.substr(0, 64 << 10));
}

TEST_F(GcsFaultsTest, StalledReadIsAbandonedAndResumed) {
  std::string data = random_bytes(1 << 20, 9);
  seed_object("obj", data);
  GcsOptions options = this->options();
  options.transport.stall_timeout = std::chrono::milliseconds(200);
  auto store = make_gcs_store(options).value();
  emu_->inject_fault("objects.media", Fault::stall(absl::Seconds(2), 64 << 10));
  std::string buffer(data.size(), '\0');
  auto start = std::chrono::steady_clock::now();
  auto result = store->read_object(read_request(bucket_, "obj"), buffer.data(), buffer.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1900));
  EXPECT_EQ(buffer, data);
  EXPECT_EQ(result->attempts, 2);
  EXPECT_EQ(emu_->request_count("objects.media"), 2u);
}

TEST_F(GcsFaultsTest, RetriesGiveUpAfterMaxAttempts) {
  seed_object("obj", "abc");
  for (int i = 0; i < 6; ++i) emu_->inject_fault("objects.get", Fault::status(503));
  auto meta = store_->get_object_metadata(bucket_, "obj");
  EXPECT_EQ(meta.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(meta.status().message(), HasSubstr("503"));
  EXPECT_THAT(meta.status().message(), HasSubstr("gs://" + bucket_ + "/obj"));
  EXPECT_EQ(emu_->request_count("objects.get"), 5u);  // options().retry.max_attempts
}

TEST_F(GcsFaultsTest, ListAndMetadataRetry) {
  seed_object("obj", "abc");
  emu_->inject_fault("objects.list", Fault::status(429));
  emu_->inject_fault("objects.list", Fault::reset());
  auto page = store_->list_objects(list_request(bucket_));
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(emu_->request_count("objects.list"), 3u);
  emu_->inject_fault("objects.get", Fault::status(500));
  EXPECT_TRUE(store_->get_object_metadata(bucket_, "obj").ok());
  EXPECT_EQ(emu_->request_count("objects.get"), 2u);
}

TEST_F(GcsFaultsTest, PermanentErrorsAreNotRetried) {
  seed_object("obj", "abc");
  emu_->inject_fault("objects.get", Fault::status(403));
  auto meta = store_->get_object_metadata(bucket_, "obj");
  EXPECT_EQ(meta.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(emu_->request_count("objects.get"), 1u);
}

TEST_F(GcsFaultsTest, WriteWithPreconditionIsRetried) {
  emu_->inject_fault("objects.insert", Fault::status(503));
  emu_->inject_fault("objects.insert", Fault::reset());
  WriteObjectRequest request = write_request(bucket_, "obj");
  request.if_generation_match = 0;
  std::string data = random_bytes(300000, 10);
  auto meta = store_->write_object(request, data);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(stored("obj"), data);
  EXPECT_EQ(emu_->request_count("objects.insert"), 3u);
}

TEST_F(GcsFaultsTest, WriteWithoutPreconditionIsNotRetried) {
  emu_->inject_fault("objects.insert", Fault::status(503));
  auto meta = store_->write_object(write_request(bucket_, "obj"), "data");
  EXPECT_EQ(meta.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(emu_->request_count("objects.insert"), 1u);
  EXPECT_FALSE(exists("obj"));
}

TEST_F(GcsFaultsTest, DeleteRetriedOnlyWithGeneration) {
  std::int64_t g = seed_object("a", "x");
  seed_object("b", "x");
  emu_->inject_fault("objects.delete", Fault::status(503));
  EXPECT_EQ(store_->delete_object(delete_request(bucket_, "b")).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(exists("b"));
  emu_->inject_fault("objects.delete", Fault::status(503));
  EXPECT_TRUE(store_->delete_object(delete_request(bucket_, "a", g)).ok());
  EXPECT_FALSE(exists("a"));
  EXPECT_EQ(emu_->request_count("objects.delete"), 3u);
}

TEST_F(GcsFaultsTest, ComposeAndCopyRetriedWithPrecondition) {
  auto g = seed_object("p", "part");
  ComposeObjectRequest compose = compose_request(bucket_, "c");
  compose.sources = {{"p", g}, {"p", g}};
  compose.if_generation_match = 0;
  emu_->inject_fault("objects.compose", Fault::status(503));
  auto meta = store_->compose_object(compose);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(stored("c"), "partpart");
  EXPECT_EQ(emu_->request_count("objects.compose"), 2u);

  compose.destination = "c2";
  compose.if_generation_match.reset();
  emu_->inject_fault("objects.compose", Fault::status(503));
  EXPECT_EQ(store_->compose_object(compose).status().code(), absl::StatusCode::kUnavailable);

  CopyObjectRequest copy;
  copy.source_bucket = copy.destination_bucket = bucket_;
  copy.source_object = "p";
  copy.destination_object = "q";
  copy.if_generation_match = 0;
  emu_->inject_fault("objects.rewrite", Fault::status(502));
  ASSERT_TRUE(store_->copy_object(copy).ok());
  EXPECT_EQ(stored("q"), "part");
}

class CountingCredentials : public Credentials {
 public:
  absl::StatusOr<std::optional<std::string>> authorization_header() override {
    ++headers;
    return std::optional<std::string>("Bearer token-" + std::to_string(refreshes.load()));
  }
  void on_unauthorized() override { ++refreshes; }
  std::atomic<int> headers{0};
  std::atomic<int> refreshes{0};
};

TEST_F(GcsFaultsTest, UnauthorizedRefreshesCredentialsOnce) {
  seed_object("obj", "abc");
  auto creds = std::make_shared<CountingCredentials>();
  GcsOptions options = this->options();
  options.anonymous = false;
  options.credentials = creds;
  auto store = make_gcs_store(options).value();
  emu_->inject_fault("objects.get", Fault::status(401));
  ASSERT_TRUE(store->get_object_metadata(bucket_, "obj").ok());
  EXPECT_EQ(creds->refreshes.load(), 1);
  EXPECT_EQ(emu_->request_count("objects.get"), 2u);

  // A second 401 in the same operation is final, and the token never shows in the message.
  emu_->inject_fault("objects.media", Fault::status(401));
  emu_->inject_fault("objects.media", Fault::status(401));
  char buf[8];
  auto read = store->read_object(read_request(bucket_, "obj"), buf, sizeof(buf));
  EXPECT_EQ(read.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(read.status().message()), ::testing::Not(HasSubstr("token-")));
  EXPECT_EQ(emu_->request_count("objects.media"), 2u);
}

}  // namespace
}  // namespace dataflux::testing
