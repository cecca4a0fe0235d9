// The one read path (src/http/object_read.h) on GCS and S3 alike: a response that is not the
// range asked for is never delivered; a link that keeps breaking still completes a read with
// default retry options; a gzip-encoded GCS object is read as stored, whole and in ranges.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "dataflux/crc32c.h"
#include "dataflux/gcs.h"
#include "dataflux/s3.h"
#include "emulator/emulator.h"
#include "http/http_transport.h"

namespace dataflux::testing {
namespace {

using emulator::Fault;
using ::testing::HasSubstr;

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    std::uint64_t v = rng();
    std::memcpy(&out[i], &v, 8);
  }
  return out;
}

// A gzip stream of `data` (zlib), as `gzip` or a browser would store it.
std::string gzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

struct Backend {
  const char* name;
  const char* media_operation;  // the emulator's name for a media GET
};

class ReadValidationTest : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() {
    emulator::EmulatorOptions options;
    options.s3.access_keys["AKIAREADVALIDATION01"] = "read-validation-secret";
    options.s3.allow_anonymous = false;
    auto emu = emulator::Emulator::start(options);
    ASSERT_TRUE(emu.ok()) << emu.status();
    emu_ = emu->release();
  }
  static void TearDownTestSuite() {
    delete emu_;
    emu_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(emu_, nullptr);
    emu_->clear_faults();
    emu_->reset_counters();
    static int counter = 0;
    bucket_ = "read-validation-" + std::to_string(counter++);
    ASSERT_TRUE(emu_->create_bucket(bucket_).ok());
    store_ = make_store(fast_retry());
  }

  bool gcs() const { return std::string(GetParam().name) == "gcs"; }
  const char* media() const { return GetParam().media_operation; }

  // Millisecond backoffs so that retried tests run fast; attempts as the library's default.
  static RetryOptions fast_retry() {
    RetryOptions retry;
    retry.initial_backoff = std::chrono::milliseconds(1);
    retry.max_backoff = std::chrono::milliseconds(10);
    return retry;
  }

  std::shared_ptr<ObjectStore> make_store(RetryOptions retry) const {
    // Not the default transport, so each store's keep-alive connections close with it.
    TransportOptions transport;
    transport.connect_timeout = std::chrono::seconds(5);
    if (gcs()) {
      GcsOptions o;
      o.endpoint = emu_->endpoint();
      o.anonymous = true;
      o.project = "test-project";
      o.retry = retry;
      o.transport = transport;
      auto store = make_gcs_store(o);
      EXPECT_TRUE(store.ok()) << store.status();
      return store.ok() ? *store : nullptr;
    }
    S3Options o;
    o.endpoint = emu_->endpoint();
    o.region = "us-east-1";
    o.access_key_id = "AKIAREADVALIDATION01";
    o.secret_access_key = "read-validation-secret";
    o.addressing = S3Addressing::kPath;
    o.retry = retry;
    o.transport = transport;
    auto store = make_s3_store(o);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *store : nullptr;
  }

  ReadObjectRequest request(std::uint64_t offset = 0,
                            std::optional<std::uint64_t> length = std::nullopt) const {
    ReadObjectRequest r;
    r.bucket = bucket_;
    r.object = "obj";
    r.offset = offset;
    r.length = length;
    return r;
  }

  // Every byte a sink read delivers, in order, repeats included.
  absl::StatusOr<std::string> read_to_sink(const ReadObjectRequest& r) {
    std::string got;
    auto result = store_->read_object(r, [&](const char* p, std::size_t n) {
      got.append(p, n);
      return absl::OkStatus();
    });
    if (!result.ok()) return result.status();
    return got;
  }

  static emulator::Emulator* emu_;
  std::string bucket_;
  std::shared_ptr<ObjectStore> store_;
};

emulator::Emulator* ReadValidationTest::emu_ = nullptr;

TEST_P(ReadValidationTest, RangedReadAnsweredWithTheWholeObjectDeliversOnlyTheRange) {
  std::string data = random_bytes(100000, 1);
  ASSERT_TRUE(emu_->put_object(bucket_, "obj", data).ok());
  emu_->inject_fault(media(), Fault::ignore_range());
  std::string buffer(1000, '\0');
  auto result = store_->read_object(request(5000, 1000), buffer.data(), buffer.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(buffer, data.substr(5000, 1000));
  EXPECT_EQ(result->bytes, 1000u);
  EXPECT_EQ(emu_->request_count(media()), 1u);

  // Open-ended: from an offset to the end.
  emu_->inject_fault(media(), Fault::ignore_range());
  auto tail = read_to_sink(request(90000));
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(*tail, data.substr(90000));
}

TEST_P(ReadValidationTest, ResumedReadAnsweredWithTheWholeObjectNeverRepeatsBytes) {
  std::string data = random_bytes(1 << 20, 2);
  ASSERT_TRUE(emu_->put_object(bucket_, "obj", data).ok());
  emu_->inject_fault(media(), Fault::break_after(100000));
  emu_->inject_fault(media(), Fault::ignore_range());  // the resume gets 200 from byte 0
  auto got = read_to_sink(request());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), data.size());
  EXPECT_TRUE(*got == data);
  EXPECT_EQ(emu_->request_count(media()), 2u);
}

TEST_P(ReadValidationTest, ResponseStartingElsewhereIsRetriedNotDelivered) {
  std::string data = random_bytes(100000, 3);
  ASSERT_TRUE(emu_->put_object(bucket_, "obj", data).ok());
  emu_->inject_fault(media(), Fault::shift_range(100));
  std::string buffer(1000, '\0');
  auto result = store_->read_object(request(5000, 1000), buffer.data(), buffer.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(buffer, data.substr(5000, 1000));
  EXPECT_EQ(result->attempts, 2);
  EXPECT_EQ(emu_->request_count(media()), 2u);

  // A resumed read whose resume starts elsewhere.
  emu_->reset_counters();
  emu_->inject_fault(media(), Fault::break_after(30000));
  emu_->inject_fault(media(), Fault::shift_range(7));
  auto got = read_to_sink(request());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == data);
  EXPECT_EQ(emu_->request_count(media()), 3u);
}

TEST_P(ReadValidationTest, ServerThatAlwaysAnswersElsewhereFailsSayingSo) {
  std::string data = random_bytes(10000, 4);
  ASSERT_TRUE(emu_->put_object(bucket_, "obj", data).ok());
  for (int i = 0; i < 10; ++i) emu_->inject_fault(media(), Fault::shift_range(100));
  std::string delivered;
  auto result = store_->read_object(request(5000, 1000), [&](const char* p, std::size_t n) {
    delivered.append(p, n);
    return absl::OkStatus();
  });
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr("asked for bytes from 5000"));
  EXPECT_THAT(result.status().message(), HasSubstr("starts at 4900"));
  EXPECT_THAT(result.status().message(), HasSubstr("obj"));
  EXPECT_TRUE(delivered.empty()) << delivered.size() << " bytes delivered";
}

TEST_P(ReadValidationTest, BodyLongerThanAskedIsCutWhereTheRequestEnds) {
  std::string data = random_bytes(100000, 5);
  ASSERT_TRUE(emu_->put_object(bucket_, "obj", data).ok());
  emu_->inject_fault(media(), Fault::long_range(5000));
  std::string buffer(1000, '\0');  // exactly what was asked: no room for more
  auto result = store_->read_object(request(5000, 1000), buffer.data(), buffer.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(buffer, data.substr(5000, 1000));
  EXPECT_EQ(result->bytes, 1000u);
}

TEST_P(ReadValidationTest, LinkBreakingEveryMebibyteCompletesFortyMebibytesWithDefaultRetries) {
  store_ = make_store(RetryOptions{});  // the library's defaults: 10 attempts, 100 ms backoff
  std::string data = random_bytes(40 << 20, 6);
  ASSERT_TRUE(emu_->put_object(bucket_, "obj", data).ok());
  for (int i = 0; i < 39; ++i) emu_->inject_fault(media(), Fault::break_after(1 << 20));
  std::string buffer(data.size(), '\0');
  auto result = store_->read_object(request(), buffer.data(), buffer.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(buffer == data);
  EXPECT_TRUE(result->crc32c_verified);
  EXPECT_EQ(result->attempts, 40);
  EXPECT_EQ(emu_->request_count(media()), 40u);
}

TEST_P(ReadValidationTest, ReadWithoutProgressStillStopsAtTheAttemptCap) {
  std::string data = random_bytes(10000, 7);
  ASSERT_TRUE(emu_->put_object(bucket_, "obj", data).ok());
  for (int i = 0; i < 12; ++i) emu_->inject_fault(media(), Fault::status(503));
  std::string buffer(data.size(), '\0');
  auto result = store_->read_object(request(), buffer.data(), buffer.size());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(emu_->request_count(media()), 10u);  // RetryOptions::max_attempts
}

INSTANTIATE_TEST_SUITE_P(Backends, ReadValidationTest,
                         ::testing::Values(Backend{"gcs", "objects.media"},
                                           Backend{"s3", "s3.get"}),
                         [](const auto& info) { return std::string(info.param.name); });

// --- gzip-encoded GCS objects ----------------------------------------------------------------

class GzipObjectTest : public ReadValidationTest {
 protected:
  // Uploads `stored` as it is, with Content-Encoding: gzip (a media upload, as gsutil -Z does).
  void upload_gzip(const std::string& name, const std::string& stored) {
    internal::HttpRequest put;
    put.method = "POST";
    put.url = emu_->endpoint() + "/upload/storage/v1/b/" + bucket_ +
              "/o?uploadType=media&contentEncoding=gzip&name=" + name;
    put.headers.emplace_back("Content-Type", "text/plain");
    put.body = stored;
    auto response = internal::HttpTransport::instance()->send(std::move(put));
    ASSERT_TRUE(response.status.ok()) << response.status;
    ASSERT_EQ(response.http_status, 200) << response.body;
    EXPECT_THAT(response.body, HasSubstr("\"contentEncoding\":\"gzip\""));
  }
  internal::HttpResponse raw_get(const std::string& name, const std::string& range,
                                 const std::string& accept_encoding) {
    internal::HttpRequest get;
    get.url = emu_->endpoint() + "/download/storage/v1/b/" + bucket_ + "/o/" + name + "?alt=media";
    if (!range.empty()) get.headers.emplace_back("Range", range);
    if (!accept_encoding.empty()) get.headers.emplace_back("Accept-Encoding", accept_encoding);
    return internal::HttpTransport::instance()->send(std::move(get));
  }
};

TEST_P(GzipObjectTest, EmulatorTranscodesUnlessTheClientAcceptsGzip) {
  std::string plain = std::string(20000, 'a') + random_bytes(20000, 8);
  std::string stored = gzip(plain);
  upload_gzip("obj", stored);
  // No Accept-Encoding: decompressed, Range ignored, no Content-Length or Content-Encoding.
  auto transcoded = raw_get("obj", "bytes=10-99", "");
  ASSERT_TRUE(transcoded.status.ok()) << transcoded.status;
  EXPECT_EQ(transcoded.http_status, 200);
  EXPECT_TRUE(transcoded.body == plain);
  EXPECT_FALSE(transcoded.header("content-length").has_value());
  EXPECT_FALSE(transcoded.header("content-encoding").has_value());
  EXPECT_EQ(transcoded.header("x-goog-stored-content-encoding"), "gzip");
  // Accept-Encoding: gzip: the stored bytes, Range honoured.
  auto as_stored = raw_get("obj", "bytes=10-99", "gzip, deflate");
  EXPECT_EQ(as_stored.http_status, 206);
  EXPECT_TRUE(as_stored.body == stored.substr(10, 90));
  EXPECT_EQ(as_stored.header("content-encoding"), "gzip");
}

TEST_P(GzipObjectTest, ReadsGiveTheStoredBytesWholeAndInRanges) {
  std::string plain = std::string(50000, 'x') + random_bytes(50000, 9);
  std::string stored = gzip(plain);
  ASSERT_GT(stored.size(), 1000u);
  upload_gzip("obj", stored);

  std::string whole(stored.size(), '\0');
  auto result = store_->read_object(request(), whole.data(), whole.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(whole == stored);
  EXPECT_TRUE(result->crc32c_verified);  // the stored bytes' CRC32C checks
  EXPECT_EQ(result->crc32c, crc32c(stored));

  std::string slice(100, '\0');
  result = store_->read_object(request(10, 100), slice.data(), slice.size());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(slice == stored.substr(10, 100));

  auto tail = read_to_sink(request(500));  // open-ended
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_TRUE(*tail == stored.substr(500));

  // A resumed sink read hands every stored byte over exactly once.
  emu_->inject_fault("objects.media", Fault::break_after(300));
  auto resumed = read_to_sink(request());
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_TRUE(*resumed == stored);
}

INSTANTIATE_TEST_SUITE_P(Gcs, GzipObjectTest, ::testing::Values(Backend{"gcs", "objects.media"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace dataflux::testing
