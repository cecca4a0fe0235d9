// read_object against the emulator: buffers, sinks, ranges, bounds, checksums, concurrency.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <new>
#include <stdexcept>
#include <vector>

#include "dataflux/crc32c.h"
#include "gcs_test_env.h"

namespace dataflux::testing {
namespace {

using ::testing::HasSubstr;

class GcsReadTest : public GcsEmulatorTest {};

TEST_F(GcsReadTest, WholeObjectIntoBufferIsVerified) {
  std::string data = random_bytes(1 << 20, 1);
  std::int64_t generation = seed_object("obj", data);
  std::string buffer(data.size(), '\0');
  auto result = store_->read_object(read_request(bucket_, "obj"), buffer.data(), buffer.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(buffer, data);
  EXPECT_EQ(result->bytes, data.size());
  EXPECT_EQ(result->object_size, data.size());
  EXPECT_EQ(result->generation, generation);
  EXPECT_EQ(result->crc32c, crc32c(data));
  EXPECT_TRUE(result->crc32c_verified);
  EXPECT_EQ(result->attempts, 1);
  EXPECT_EQ(emu_->request_count("objects.media"), 1u);
}

TEST_F(GcsReadTest, RangesAndOffsets) {
  std::string data = random_bytes(100000, 2);
  seed_object("obj", data);
  std::string buffer(1000, '\0');
  ReadObjectRequest request = read_request(bucket_, "obj");
  request.offset = 5000;
  request.length = 1000;
  auto result = store_->read_object(request, buffer.data(), buffer.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(buffer, data.substr(5000, 1000));
  EXPECT_EQ(result->object_size, data.size());
  EXPECT_FALSE(result->crc32c_verified);  // only whole-object reads can be checked

  // From an offset to the end.
  std::string tail(data.size() - 99000, '\0');
  request.offset = 99000;
  request.length.reset();
  result = store_->read_object(request, tail.data(), tail.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(tail, data.substr(99000));

  // A length running past the end returns what exists.
  std::string buf(500, '\0');
  request.offset = 99800;
  request.length = 500;
  result = store_->read_object(request, buf.data(), buf.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->bytes, 200u);
  EXPECT_EQ(buf.substr(0, 200), data.substr(99800));
}

TEST_F(GcsReadTest, OffsetAtEndIsEmptyPastEndIsOutOfRange) {
  seed_object("obj", std::string(10, 'x'));
  char buf[16];
  ReadObjectRequest request = read_request(bucket_, "obj");
  request.offset = 10;
  auto at_end = store_->read_object(request, buf, sizeof(buf));
  ASSERT_TRUE(at_end.ok()) << at_end.status();
  EXPECT_EQ(at_end->bytes, 0u);
  EXPECT_EQ(at_end->object_size, 10u);

  request.offset = 11;
  auto past = store_->read_object(request, buf, sizeof(buf));
  EXPECT_EQ(past.status().code(), absl::StatusCode::kOutOfRange) << past.status();
  request.length = 0;
  past = store_->read_object(request, buf, sizeof(buf));
  EXPECT_EQ(past.status().code(), absl::StatusCode::kOutOfRange) << past.status();
  request.length = 3;
  past = store_->read_object(request, buf, sizeof(buf));
  EXPECT_EQ(past.status().code(), absl::StatusCode::kOutOfRange) << past.status();
}

TEST_F(GcsReadTest, LengthBeyondCapacityFailsBeforeAnyRequest) {
  seed_object("obj", std::string(100, 'x'));
  char buf[10];
  ReadObjectRequest request = read_request(bucket_, "obj");
  request.length = 11;
  auto result = store_->read_object(request, buf, sizeof(buf));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(emu_->request_count("objects.media"), 0u);
}

TEST_F(GcsReadTest, WholeObjectLargerThanBufferNeverWritesPastCapacity) {
  std::string data = random_bytes(300000, 3);
  seed_object("obj", data);
  std::string buffer(200000 + 4096, '\xAB');  // the tail is a guard zone
  auto result = store_->read_object(read_request(bucket_, "obj"), buffer.data(), 200000);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr("gs://" + bucket_ + "/obj"));
  EXPECT_EQ(buffer.substr(200000), std::string(4096, '\xAB'));
}

TEST_F(GcsReadTest, ZeroByteObject) {
  seed_object("empty", "");
  auto result = store_->read_object(read_request(bucket_, "empty"), nullptr, 0);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->bytes, 0u);
  EXPECT_EQ(result->object_size, 0u);
  EXPECT_TRUE(result->crc32c_verified);
  int calls = 0;
  result = store_->read_object(read_request(bucket_, "empty"), [&](const char*, std::size_t) {
    ++calls;
    return absl::OkStatus();
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(calls, 0);
}

TEST_F(GcsReadTest, SinkGetsExactBytesAndCanStopTheRead) {
  std::string data = random_bytes(700000, 4);
  seed_object("obj", data);
  std::string got;
  auto result =
      store_->read_object(read_request(bucket_, "obj"), [&](const char* p, std::size_t n) {
        got.append(p, n);
        return absl::OkStatus();
      });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(got, data);
  EXPECT_TRUE(result->crc32c_verified);

  result = store_->read_object(read_request(bucket_, "obj"), [&](const char*, std::size_t) {
    return absl::AbortedError("enough");
  });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(result.status().message(), "enough");
}

// User callbacks that throw (a sink, a completion callback), an allocation failure among them,
// end that read with an error naming it, and the transport goes on serving the next.
TEST_F(GcsReadTest, CallbacksThatThrowFailTheirReadAndNothingElse) {
  std::string data = random_bytes(300000, 5);
  seed_object("obj", data);
  auto result = store_->read_object(read_request(bucket_, "obj"), [&](const char*, std::size_t) {
    throw std::runtime_error("sink on fire");
    return absl::OkStatus();
  });
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("sink on fire"));
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("gs://" + bucket_ + "/obj"));

  result = store_->read_object(
      read_request(bucket_, "obj"),
      [&](const char*, std::size_t) -> absl::Status { throw std::bad_alloc(); });
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("bad_alloc"));

  // A completion callback that throws on the transport's thread: the next reads still run.
  std::string buffer(data.size(), '\0');
  std::promise<void> called;
  store_->read_object_async(read_request(bucket_, "obj"), buffer.data(), buffer.size(),
                            [&](absl::StatusOr<ReadObjectResult>) {
                              called.set_value();
                              throw std::runtime_error("callback on fire");
                            });
  called.get_future().wait();
  std::string again(data.size(), '\0');
  auto ok = store_->read_object(read_request(bucket_, "obj"), again.data(), again.size());
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(again, data);
}

TEST_F(GcsReadTest, MissingObjectIsNotFoundNamingIt) {
  char buf[4];
  auto result = store_->read_object(read_request(bucket_, "nope/missing"), buf, sizeof(buf));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(result.status().message(), HasSubstr("gs://" + bucket_ + "/nope/missing"));
  EXPECT_THAT(result.status().message(), HasSubstr("404"));
  std::string sunk;
  result = store_->read_object(read_request(bucket_, "nope"), [&](const char* p, std::size_t n) {
    sunk.append(p, n);
    return absl::OkStatus();
  });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(sunk.empty()) << "the error body must not reach the sink: " << sunk;
}

TEST_F(GcsReadTest, WrongExpectedCrcIsDataLoss) {
  std::string data = random_bytes(5000, 5);
  seed_object("obj", data);
  std::string buffer(data.size(), '\0');
  ReadObjectRequest request = read_request(bucket_, "obj");
  request.expected_crc32c = crc32c(data) ^ 1;
  auto result = store_->read_object(request, buffer.data(), buffer.size());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(result.status().message(), HasSubstr("gs://" + bucket_ + "/obj"));
  EXPECT_THAT(result.status().message(), HasSubstr(crc32c_to_base64(crc32c(data))));

  request.verify_crc32c = false;
  result = store_->read_object(request, buffer.data(), buffer.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->crc32c_verified);
}

TEST_F(GcsReadTest, GenerationPinning) {
  std::int64_t g1 = seed_object("obj", "first");
  std::int64_t g2 = seed_object("obj", "second!");
  char buf[16];
  ReadObjectRequest request = read_request(bucket_, "obj");
  request.generation = g2;
  auto result = store_->read_object(request, buf, sizeof(buf));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(std::string(buf, result->bytes), "second!");
  EXPECT_EQ(result->generation, g2);
  // The emulator keeps no old generations (like a bucket without versioning).
  request.generation = g1;
  result = store_->read_object(request, buf, sizeof(buf));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound) << result.status();
}

TEST_F(GcsReadTest, LargeObjectInParallelRanges) {
  constexpr std::size_t kSize = 256u << 20;
  constexpr std::size_t kRange = 32u << 20;
  std::uint32_t expected_crc = 0;
  {
    std::string data = random_bytes(kSize, 6);
    expected_crc = crc32c(data);
    seed_object("big", std::move(data));
  }
  std::string buffer(kSize, '\0');
  std::mutex mu;
  std::condition_variable cv;
  int pending = kSize / kRange;
  std::vector<absl::Status> errors;
  for (std::size_t off = 0; off < kSize; off += kRange) {
    ReadObjectRequest request = read_request(bucket_, "big");
    request.offset = off;
    request.length = kRange;
    store_->read_object_async(request, buffer.data() + off, kRange,
                              [&](absl::StatusOr<ReadObjectResult> r) {
                                std::lock_guard<std::mutex> lock(mu);
                                if (!r.ok()) {
                                  errors.push_back(r.status());
                                } else if (r->bytes != kRange) {
                                  errors.push_back(absl::InternalError("short"));
                                }
                                if (--pending == 0) cv.notify_all();
                              });
  }
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return pending == 0; }));
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(crc32c(buffer), expected_crc);
  EXPECT_EQ(emu_->request_count("objects.media"), kSize / kRange);
}

TEST_F(GcsReadTest, HundredConcurrentAsyncReads) {
  constexpr int kObjects = 100;
  std::vector<std::string> data(kObjects);
  for (int i = 0; i < kObjects; ++i) {
    data[i] = random_bytes(32768 + i * 131, 100 + i);
    seed_object("o" + std::to_string(i), data[i]);
  }
  std::vector<std::string> buffers(kObjects);
  std::mutex mu;
  std::condition_variable cv;
  int pending = kObjects;
  int verified = 0;
  std::vector<absl::Status> errors;
  for (int i = 0; i < kObjects; ++i) {
    buffers[i].assign(data[i].size(), '\0');
    store_->read_object_async(read_request(bucket_, "o" + std::to_string(i)), buffers[i].data(),
                              buffers[i].size(), [&](absl::StatusOr<ReadObjectResult> r) {
                                std::lock_guard<std::mutex> lock(mu);
                                if (!r.ok()) {
                                  errors.push_back(r.status());
                                } else if (r->crc32c_verified) {
                                  ++verified;
                                }
                                if (--pending == 0) cv.notify_all();
                              });
  }
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return pending == 0; }));
  ASSERT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(verified, kObjects);
  for (int i = 0; i < kObjects; ++i) EXPECT_EQ(buffers[i], data[i]) << i;
  EXPECT_EQ(emu_->request_count("objects.media"), static_cast<std::uint64_t>(kObjects));
}

TEST_F(GcsReadTest, AsyncErrorsArriveThroughTheCallback) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<absl::Status> got;
  store_->read_object_async(read_request(bucket_, "missing"), nullptr, 0,
                            [&](absl::StatusOr<ReadObjectResult> r) {
                              std::lock_guard<std::mutex> lock(mu);
                              got = r.status();
                              cv.notify_all();
                            });
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return got.has_value(); }));
  EXPECT_EQ(got->code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace dataflux::testing
