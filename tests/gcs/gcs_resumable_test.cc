// Resumable uploads against the emulator: chunking, failures mid-chunk, resume, cancel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dataflux/crc32c.h"
#include "gcs_test_env.h"

namespace dataflux::testing {
namespace {

using emulator::Fault;

constexpr std::size_t kChunk = 256 << 10;

class GcsResumableTest : public GcsEmulatorTest {
 protected:
  void SetUp() override {
    GcsEmulatorTest::SetUp();
    GcsOptions options = this->options();
    options.resumable_chunk_size = 1;  // rounds up to one 256 KiB quantum
    store_ = make_gcs_store(options).value();
  }

  std::unique_ptr<WriteSession> start(const std::string& name,
                                      std::optional<std::int64_t> if_generation_match = {}) {
    WriteObjectRequest request = write_request(bucket_, name);
    request.if_generation_match = if_generation_match;
    auto session = store_->start_resumable_write(request);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  }

  // Writes `data` in uneven pieces.
  static void write_in_pieces(WriteSession& session, std::string_view data) {
    std::size_t piece = 1000;
    while (!data.empty()) {
      std::size_t n = std::min(piece, data.size());
      ASSERT_TRUE(session.write(data.substr(0, n)).ok());
      data.remove_prefix(n);
      piece = piece * 3 + 17;
    }
  }
};

TEST_F(GcsResumableTest, ChunkedUploadInUnevenPieces) {
  std::string data = random_bytes(4 * kChunk + 123, 1);
  auto session = start("obj");
  ASSERT_NE(session, nullptr);
  EXPECT_FALSE(session->session_id().empty());
  write_in_pieces(*session, data);
  EXPECT_EQ(session->persisted_size(), 4 * kChunk);
  auto meta = session->finish();
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->size, data.size());
  EXPECT_EQ(meta->crc32c, crc32c(data));
  EXPECT_EQ(stored("obj"), data);
  EXPECT_EQ(emu_->request_count("objects.insert"), 1u);  // the session start
  EXPECT_EQ(emu_->request_count("objects.upload"), 5u);  // four chunks and the tail
  EXPECT_EQ(session->write("more").code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(GcsResumableTest, ExactMultipleAndEmptyUploads) {
  std::string data = random_bytes(2 * kChunk, 2);
  auto session = start("exact");
  ASSERT_TRUE(session->write(data).ok());  // whole chunks straight from the caller's bytes
  EXPECT_EQ(session->persisted_size(), 2 * kChunk);
  auto meta = session->finish();  // "bytes */T"
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(stored("exact"), data);

  auto empty = start("empty");
  meta = empty->finish();
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->size, 0u);
  EXPECT_EQ(stored("empty"), "");
}

TEST_F(GcsResumableTest, ChunkFailingMidwayIsResent) {
  std::string data = random_bytes(3 * kChunk + 5000, 3);
  auto session = start("obj");
  ASSERT_NE(session, nullptr);
  emu_->reset_counters();
  emu_->inject_fault("objects.upload", Fault::status(503));  // first chunk
  emu_->inject_fault("objects.upload", Fault::status(503));  // the status query after it
  write_in_pieces(*session, data.substr(0, 2 * kChunk));
  emu_->inject_fault("objects.upload", Fault::reset());  // third chunk
  write_in_pieces(*session, data.substr(2 * kChunk));
  emu_->inject_fault("objects.upload", Fault::status(500));  // the final request
  auto meta = session->finish();
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(stored("obj"), data);
  EXPECT_EQ(meta->crc32c, crc32c(data));
  // 4 successful PUTs, 4 faulted requests, and a status query after the last two faults.
  EXPECT_GE(emu_->request_count("objects.upload"), 9u);
  EXPECT_LE(emu_->request_count("objects.upload"), 11u);
}

TEST_F(GcsResumableTest, ResumeFromAnotherSessionObject) {
  std::string data = random_bytes(3 * kChunk + 777, 4);
  auto first = start("obj");
  ASSERT_TRUE(first->write(std::string_view(data).substr(0, 2 * kChunk + 1000)).ok());
  ASSERT_EQ(first->persisted_size(), 2 * kChunk);  // the 1000 bytes are only in memory

  // A new process picks the upload up from its id and sends from persisted_size on.
  auto second = store_->resume_resumable_write(write_request(bucket_, "obj"), first->session_id());
  ASSERT_TRUE(second.ok()) << second.status();
  std::uint64_t from = (*second)->persisted_size();
  EXPECT_EQ(from, 2 * kChunk);
  ASSERT_TRUE((*second)->write(std::string_view(data).substr(from)).ok());
  auto meta = (*second)->finish();
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->crc32c, crc32c(data));
  EXPECT_EQ(stored("obj"), data);
  first.reset();  // cancelling a finished upload must not remove the object
  EXPECT_EQ(stored("obj"), data);
}

TEST_F(GcsResumableTest, ResumeRejectsForeignSessionUrls) {
  auto session =
      store_->resume_resumable_write(write_request(bucket_, "obj"), "https://evil.example/upload");
  EXPECT_EQ(session.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(GcsResumableTest, CancelAndDestructorLeaveNoObject) {
  auto session = start("cancelled");
  ASSERT_TRUE(session->write(random_bytes(kChunk + 10, 5)).ok());
  ASSERT_TRUE(session->cancel().ok());
  EXPECT_FALSE(session->finish().ok());
  EXPECT_FALSE(exists("cancelled"));
  EXPECT_EQ(emu_->request_count("objects.upload"), 2u);  // one chunk PUT, one DELETE

  auto dropped = start("dropped");
  ASSERT_TRUE(dropped->write(random_bytes(kChunk + 10, 6)).ok());
  std::string id = dropped->session_id();
  dropped.reset();
  EXPECT_FALSE(exists("dropped"));
  auto resumed = store_->resume_resumable_write(write_request(bucket_, "dropped"), id);
  EXPECT_FALSE(resumed.ok());  // the session is gone
}

TEST_F(GcsResumableTest, PreconditionFailure) {
  seed_object("obj", "existing");
  WriteObjectRequest request = write_request(bucket_, "obj");
  request.if_generation_match = 0;
  absl::Status status;
  auto session = store_->start_resumable_write(request);
  if (!session.ok()) {
    status = session.status();
  } else {
    ASSERT_TRUE((*session)->write("new data").ok());
    status = (*session)->finish().status();
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_EQ(stored("obj"), "existing");
}

TEST_F(GcsResumableTest, WrongCallerCrcFailsTheUpload) {
  WriteObjectRequest request = write_request(bucket_, "obj");
  request.crc32c = crc32c("payload") ^ 1;
  auto session = store_->start_resumable_write(request);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->write("payload").ok());
  auto meta = (*session)->finish();
  EXPECT_FALSE(meta.ok());
  EXPECT_THAT(meta.status().code(),
              ::testing::AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace dataflux::testing
