// What only the emulator can show: signature verification, S3 error codes on the wire, and
// recovery from injected faults.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "s3_test_env.h"

namespace dataflux::testing {
namespace {

using ::testing::HasSubstr;

class S3EmulatorTest : public S3TestEnv {};

TEST_F(S3EmulatorTest, WrongSecretIsSignatureDoesNotMatch) {
  DATAFLUX_S3_NEEDS_EMULATOR();
  S3Options bad = options();
  bad.secret_access_key = secret_ + "x";
  auto store = make_s3_store(bad);
  ASSERT_TRUE(store.ok());
  auto meta = (*store)->get_object_metadata(bucket_, "anything");  // HEAD: no error body
  EXPECT_EQ(meta.status().code(), absl::StatusCode::kPermissionDenied) << meta.status();
  ListObjectsRequest list;
  list.bucket = bucket_;
  auto page = (*store)->list_objects(list);
  EXPECT_EQ(page.status().code(), absl::StatusCode::kPermissionDenied) << page.status();
  EXPECT_THAT(std::string(page.status().message()), HasSubstr("SignatureDoesNotMatch"));
  EXPECT_THAT(std::string(page.status().message()), HasSubstr("HTTP 403"));
  // The secret never appears in errors.
  EXPECT_THAT(std::string(page.status().message()), ::testing::Not(HasSubstr(secret_)));
}

TEST_F(S3EmulatorTest, UnknownKeyAndAnonymousAccessAreRefused) {
  DATAFLUX_S3_NEEDS_EMULATOR();
  S3Options unknown = options();
  unknown.access_key_id = "AKIAUNKNOWN";
  auto page = (*make_s3_store(unknown))->list_objects({bucket_});
  EXPECT_EQ(page.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(page.status().message()), HasSubstr("InvalidAccessKeyId"));
  S3Options anonymous = options();
  anonymous.anonymous = true;
  page = (*make_s3_store(anonymous))->list_objects({bucket_});
  EXPECT_EQ(page.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(page.status().message()), HasSubstr("AccessDenied"));
}

TEST_F(S3EmulatorTest, ABrokenDownloadResumesFromTheLastByte) {
  DATAFLUX_S3_NEEDS_EMULATOR();
  const std::string data = random_data(1 << 20, 7);
  ASSERT_TRUE(store_->write_object(write("big"), data).ok());
  emu_->inject_fault("s3.get", emulator::Fault::break_after(300'000));
  emu_->reset_counters();
  std::string buffer(data.size(), '\0');
  auto r = store_->read_object(read_req("big"), buffer.data(), buffer.size());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(buffer, data);
  EXPECT_TRUE(r->crc32c_verified);
  EXPECT_EQ(emu_->request_count("s3.get"), 2u);
}

TEST_F(S3EmulatorTest, SlowDownAndInternalErrorsAreRetried) {
  DATAFLUX_S3_NEEDS_EMULATOR();
  emu_->inject_fault("s3.put", emulator::Fault::status(503));
  emu_->inject_fault("s3.put", emulator::Fault::status(500));
  emu_->reset_counters();
  ASSERT_TRUE(store_->write_object(write("retried"), "ok").ok());
  EXPECT_EQ(emu_->request_count("s3.put"), 3u);
  EXPECT_EQ(read_all("retried"), "ok");
  // Not retried: a permanent error.
  emu_->inject_fault("s3.head", emulator::Fault::status(403));
  EXPECT_EQ(store_->get_object_metadata(bucket_, "retried").status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST_F(S3EmulatorTest, OverwriteDuringAResumedReadIsDetected) {
  DATAFLUX_S3_NEEDS_EMULATOR();
  ASSERT_TRUE(store_->write_object(write("v"), random_data(1 << 20, 8)).ok());
  // The first attempt breaks; before the resume, another writer replaces the object.
  emu_->inject_fault("s3.get", emulator::Fault::break_after(100'000));
  std::string sink;
  bool overwritten = false;
  auto r = store_->read_object(read_req("v"), [&](const char* d, std::size_t n) {
    sink.append(d, n);
    if (!overwritten && sink.size() >= 100'000) {
      overwritten = true;
      EXPECT_TRUE(emu_->put_object(bucket_, "v", random_data(1 << 20, 9)).ok());
    }
    return absl::OkStatus();
  });
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
}

TEST_F(S3EmulatorTest, TheSameBucketIsVisibleThroughBothApis) {
  DATAFLUX_S3_NEEDS_EMULATOR();
  ASSERT_TRUE(store_->write_object(write("shared"), "both").ok());
  auto data = emu_->get_object_data(bucket_, "shared");
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(*data, "both");
}

}  // namespace
}  // namespace dataflux::testing
