// Pure tests of the header and range math behind reads and resumable uploads.
#include <gtest/gtest.h>

#include <string>

#include "core/byte_range.h"
#include "dataflux/crc32c.h"
#include "gcs/gcs_read.h"
#include "gcs/gcs_upload.h"

namespace dataflux::internal {
namespace {

TEST(ReadRange, WholeObjectSendsNoHeader) {
  EXPECT_FALSE(read_range_header(0, std::nullopt, 0).has_value());
}

TEST(ReadRange, ResumesAfterDeliveredBytes) {
  EXPECT_EQ(read_range_header(0, std::nullopt, 65536), "bytes=65536-");
  EXPECT_EQ(read_range_header(100, std::nullopt, 0), "bytes=100-");
  EXPECT_EQ(read_range_header(100, 50, 0), "bytes=100-149");
  EXPECT_EQ(read_range_header(100, 50, 20), "bytes=120-149");
  EXPECT_EQ(read_range_header(0, 1, 0), "bytes=0-0");
}

TEST(HashHeaders, FindsCrc32c) {
  std::string crc = crc32c_to_base64(0xdeadbeef);
  EXPECT_EQ(crc32c_from_hash_headers({"crc32c=" + crc + ",md5=abc=="}), 0xdeadbeefu);
  EXPECT_EQ(crc32c_from_hash_headers({"md5=abc==", "crc32c=" + crc}), 0xdeadbeefu);
  EXPECT_EQ(crc32c_from_hash_headers({"md5=abc==, crc32c=" + crc}), 0xdeadbeefu);
  EXPECT_FALSE(crc32c_from_hash_headers({"md5=abc=="}).has_value());
  EXPECT_FALSE(crc32c_from_hash_headers({}).has_value());
  EXPECT_FALSE(crc32c_from_hash_headers({"crc32c=***"}).has_value());
}

TEST(ContentRange, Total) {
  EXPECT_EQ(total_from_content_range("bytes 0-9/100"), 100u);
  EXPECT_EQ(total_from_content_range("bytes */42"), 42u);
  EXPECT_FALSE(total_from_content_range("bytes 0-9/*").has_value());
  EXPECT_FALSE(total_from_content_range("garbage").has_value());
}

TEST(ContentRange, Parts) {
  auto r = parse_content_range("bytes 10-99/1000");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first, 10u);
  EXPECT_EQ(r->last, 99u);
  EXPECT_EQ(r->total, 1000u);
  EXPECT_FALSE(parse_content_range("bytes 10-99").has_value());
  EXPECT_FALSE(parse_content_range("bytes 99-10/1000").has_value());
  EXPECT_FALSE(parse_content_range("bytes -5-10/1000").has_value());
  EXPECT_FALSE(parse_content_range("items 0-1/2").has_value());
}

// The headers GCS sends when it decompressed a gzip-stored object anyway: refused, so that no
// decompressed byte is taken for a stored one.
TEST(GcsMediaHeaders, TranscodedResponseIsNotAsStored) {
  GcsReadProtocol protocol(nullptr);  // parsing headers needs no client
  HttpResponse head;
  head.http_status = 200;
  head.headers = {{"x-goog-generation", "7"},
                  {"x-goog-stored-content-encoding", "gzip"},
                  {"x-goog-stored-content-length", "1234"}};
  MediaHeaders facts = protocol.parse_media_headers(head, true);
  EXPECT_EQ(facts.version.generation, 7);
  EXPECT_EQ(facts.stored_size, 1234u);
  EXPECT_NE(facts.not_as_stored, "");
  head.headers.emplace_back("content-encoding", "gzip");  // served as stored
  EXPECT_EQ(protocol.parse_media_headers(head, true).not_as_stored, "");
}

TEST(UploadRange, PersistedBytes) {
  EXPECT_EQ(persisted_from_range_header(std::nullopt), 0u);
  EXPECT_EQ(persisted_from_range_header(std::string("bytes=0-262143")), 262144u);
  EXPECT_FALSE(persisted_from_range_header(std::string("bytes=5-10")).has_value());
  EXPECT_FALSE(persisted_from_range_header(std::string("0-10")).has_value());
  EXPECT_FALSE(persisted_from_range_header(std::string("bytes=0-x")).has_value());
}

TEST(Multipart, BodyLayoutAndBoundary) {
  std::string data = "payload with --dataflux_ inside";
  std::string boundary = pick_multipart_boundary(data);
  EXPECT_EQ(data.find(boundary), std::string::npos);
  EXPECT_NE(pick_multipart_boundary(data), boundary);  // random each time
  std::string body = multipart_body(boundary, R"({"name":"o"})", "text/plain", data);
  EXPECT_EQ(body, "--" + boundary +
                      "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{\"name\":\"o\"}"
                      "\r\n--" +
                      boundary + "\r\nContent-Type: text/plain\r\n\r\n" + data + "\r\n--" +
                      boundary + "--\r\n");
}

}  // namespace
}  // namespace dataflux::internal
