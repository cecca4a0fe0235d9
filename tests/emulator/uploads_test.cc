// Uploads over HTTP: media, multipart with hash checks, resumable sessions (chunks, status
// queries, resume by overlap, cancel, hash on the final chunk), size limits.
#include <gtest/gtest.h>

#include <string>

#include "dataflux/crc32c.h"
#include "emulator/emulator_fixture.h"

namespace dataflux::emulator::testing {
namespace {

constexpr std::size_t kQuantum = 256 * 1024;

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
  return s;
}

class UploadTest : public EmulatorTest {
 protected:
  std::string upload_base() const { return "/upload/storage/v1/b/" + std::string(kBucket) + "/o"; }

  httplib::Result multipart(const std::string& metadata, const std::string& data,
                            const std::string& query = "") {
    const std::string body = "--BOUNDARY\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n" +
                             metadata + "\r\n--BOUNDARY\r\nContent-Type: text/plain\r\n\r\n" +
                             data + "\r\n--BOUNDARY--\r\n";
    return client_->Post((upload_base() + "?uploadType=multipart" + query).c_str(), body,
                         "multipart/related; boundary=BOUNDARY");
  }

  // Starts a resumable session; returns the session path (relative to the endpoint).
  std::string start_session(const std::string& name, const std::string& query = "") {
    auto res = client_->Post((upload_base() + "?uploadType=resumable&name=" + name + query).c_str(),
                             {{"X-Upload-Content-Type", "text/plain"}}, "", "application/json");
    EXPECT_TRUE(res);
    if (!res) return "";
    EXPECT_EQ(res->status, 200) << res->body;
    std::string location = res->get_header_value("Location");
    EXPECT_EQ(location.rfind(emu_->endpoint(), 0), 0u) << location;
    return location.substr(emu_->endpoint().size());
  }

  httplib::Result put(const std::string& session, const std::string& content_range,
                      const std::string& body, httplib::Headers extra = {}) {
    extra.emplace("Content-Range", content_range);
    return client_->Put(session.c_str(), extra, body, "application/octet-stream");
  }
};

TEST_F(UploadTest, MultipartVerifiesHashes) {
  const std::string data = "multipart payload";
  auto res = multipart(R"({"name":"mp","contentType":"text/x-mp","metadata":{"a":"b"},"crc32c":")" +
                           crc32c_to_base64(crc32c(data)) + R"("})",
                       data);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto doc = parse_json(res->body);
  EXPECT_STREQ(doc["name"].GetString(), "mp");
  EXPECT_STREQ(doc["contentType"].GetString(), "text/x-mp");
  EXPECT_STREQ(doc["metadata"]["a"].GetString(), "b");
  EXPECT_EQ(emu_->get_object_data(kBucket, "mp").value(), data);

  res = multipart(R"({"name":"bad-crc","crc32c":")" + crc32c_to_base64(crc32c("other")) + R"("})",
                  data);
  EXPECT_EQ(res->status, 400);
  res = multipart(R"({"name":"bad-md5","md5Hash":"XrY7u+Ae7tCTyyK7j1rNww=="})", data);
  EXPECT_EQ(res->status, 400);
  res = multipart(R"({"name":"good-md5","md5Hash":"XrY7u+Ae7tCTyyK7j1rNww=="})", "hello world");
  EXPECT_EQ(res->status, 200);
  EXPECT_FALSE(emu_->get_object_data(kBucket, "bad-crc").ok());
  res = multipart("{broken json", data);
  EXPECT_EQ(res->status, 400);
  res = multipart(R"({"name":"p"})", data, "&ifGenerationMatch=5");
  EXPECT_EQ(res->status, 412);

  // Truncated: the closing delimiter never comes.
  const std::string truncated =
      "--B\r\nContent-Type: application/json\r\n\r\n{\"name\":\"t\"}\r\n"
      "--B\r\nContent-Type: text/plain\r\n\r\ndata without end";
  res = client_->Post((upload_base() + "?uploadType=multipart").c_str(), truncated,
                      "multipart/related; boundary=B");
  EXPECT_EQ(res->status, 400);
  res = client_->Post((upload_base() + "?uploadType=multipart").c_str(), truncated,
                      "multipart/related");
  EXPECT_EQ(res->status, 400);
}

TEST_F(UploadTest, MediaUploadErrors) {
  EXPECT_EQ(client_->Post((upload_base() + "?uploadType=media").c_str(), "x", "text/plain")->status,
            400);  // no name
  EXPECT_EQ(client_->Post((upload_base() + "?uploadType=weird&name=a").c_str(), "x", "text/plain")
                ->status,
            400);
  EXPECT_EQ(client_->Post("/upload/storage/v1/b/nope/o?uploadType=media&name=a", "x", "text/plain")
                ->status,
            404);
  auto res = client_->Post((upload_base() + "?uploadType=media&name=h").c_str(),
                           {{"x-goog-hash", "crc32c=" + crc32c_to_base64(crc32c("other"))}}, "x",
                           "text/plain");
  EXPECT_EQ(res->status, 400);
}

// Request bodies are read slice by slice under the bandwidth model (uploads are paced like
// downloads); every upload route must still store exactly what was sent.
TEST_F(UploadTest, PacedUploadsArriveIntactOnEveryRoute) {
  CloudModel model;
  model.stream_bytes_per_second = 64e6;
  emu_->set_cloud_model(model);
  const std::string data = pattern(3 * kQuantum + 12345);
  auto res = client_->Post((upload_base() + "?uploadType=media&name=paced-media").c_str(),
                           {{"x-goog-hash", "crc32c=" + crc32c_to_base64(crc32c(data))}}, data,
                           "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(emu_->get_object_data(kBucket, "paced-media").value(), data);

  res = multipart(R"({"name":"paced-mp"})", data);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(emu_->get_object_data(kBucket, "paced-mp").value(), data);

  const std::string session = start_session("paced-resumable");
  res = put(session, "bytes 0-" + std::to_string(2 * kQuantum - 1) + "/*",
            data.substr(0, 2 * kQuantum));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 308);
  res = put(session,
            "bytes " + std::to_string(2 * kQuantum) + "-" + std::to_string(data.size() - 1) + "/" +
                std::to_string(data.size()),
            data.substr(2 * kQuantum));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(emu_->get_object_data(kBucket, "paced-resumable").value(), data);
}

TEST_F(UploadTest, ResumableInChunksWithStatusQueries) {
  const std::string data = pattern(2 * kQuantum + 1000);
  const std::string session = start_session("big%20one");
  ASSERT_FALSE(session.empty());

  auto res = put(session, "bytes */*", "");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 308);
  EXPECT_FALSE(res->has_header("Range"));  // nothing persisted yet

  res = put(session, "bytes 0-262143/*", data.substr(0, kQuantum));
  EXPECT_EQ(res->status, 308);
  EXPECT_EQ(res->get_header_value("Range"), "bytes=0-262143");
  // A non-final chunk that is not a multiple of 256 KiB is refused.
  res = put(session, "bytes 262144-262243/*", data.substr(kQuantum, 100));
  EXPECT_EQ(res->status, 400);
  // A gap is refused.
  res = put(session, "bytes 524288-786431/*", data.substr(2 * kQuantum, kQuantum));
  EXPECT_EQ(res->status, 400);
  // A client that lost the reply re-sends an overlapping chunk: the overlap is skipped.
  res = put(session, "bytes 0-524287/*", data.substr(0, 2 * kQuantum));
  EXPECT_EQ(res->status, 308);
  EXPECT_EQ(res->get_header_value("Range"), "bytes=0-524287");
  res = put(session, "bytes */*", "");
  EXPECT_EQ(res->get_header_value("Range"), "bytes=0-524287");

  // Final chunk carries the total and the CRC32C of the whole object.
  const std::string total = std::to_string(data.size());
  res =
      put(session, "bytes 524288-" + std::to_string(data.size() - 1) + "/" + total,
          data.substr(2 * kQuantum), {{"x-goog-hash", "crc32c=" + crc32c_to_base64(crc32c(data))}});
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json_string(res->body, "name"), "big one");
  EXPECT_EQ(json_string(res->body, "size"), total);
  EXPECT_EQ(json_string(res->body, "contentType"), "text/plain");
  EXPECT_EQ(emu_->get_object_data(kBucket, "big one").value(), data);
  // After completion a status query answers 200 with the object.
  res = put(session, "bytes */*", "");
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json_string(res->body, "name"), "big one");
}

TEST_F(UploadTest, ResumableFinalizeWithStarRangeAndSingleShot) {
  std::string session = start_session("fin");
  ASSERT_EQ(put(session, "bytes 0-262143/*", pattern(kQuantum))->status, 308);
  auto res = put(session, "bytes */262143", "");  // wrong total
  EXPECT_EQ(res->status, 400);

  session = start_session("fin2");
  ASSERT_EQ(put(session, "bytes 0-262143/*", pattern(kQuantum))->status, 308);
  res = put(session, "bytes */262144", "");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(emu_->get_object_data(kBucket, "fin2").value(), pattern(kQuantum));

  session = start_session("one-shot");
  res = client_->Put(session.c_str(), "all at once", "text/plain");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(emu_->get_object_data(kBucket, "one-shot").value(), "all at once");

  session = start_session("empty");
  res = put(session, "bytes */0", "");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json_string(res->body, "size"), "0");
}

TEST_F(UploadTest, ResumableHashMismatchCancelAndPreconditions) {
  std::string session = start_session("bad-hash");
  auto res = put(session, "bytes 0-4/5", "hello",
                 {{"x-goog-hash", "crc32c=" + crc32c_to_base64(crc32c("HELLO"))}});
  EXPECT_EQ(res->status, 400);
  EXPECT_FALSE(emu_->get_object_data(kBucket, "bad-hash").ok());

  session = start_session("cancelled");
  ASSERT_EQ(put(session, "bytes 0-262143/*", pattern(kQuantum))->status, 308);
  res = client_->Delete(session.c_str());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 499);
  EXPECT_EQ(put(session, "bytes */*", "")->status, 404);

  ASSERT_TRUE(emu_->put_object(kBucket, "exists", "x").ok());
  session = start_session("exists", "&ifGenerationMatch=0");
  res = put(session, "bytes 0-1/2", "yy");
  EXPECT_EQ(res->status, 412);
  EXPECT_EQ(emu_->get_object_data(kBucket, "exists").value(), "x");

  EXPECT_EQ(put(session, "garbage", "")->status, 404);  // the failed session is gone
  session = start_session("garbled");
  EXPECT_EQ(put(session, "garbage", "")->status, 400);
  EXPECT_EQ(put(session, "bytes 0-9/10", "short")->status, 400);
  EXPECT_EQ(
      client_
          ->Put((upload_base() + "?uploadType=resumable&upload_id=nope").c_str(), "x", "text/plain")
          ->status,
      404);
}

TEST_F(UploadTest, GcloudStyleResumablePrefixAndMetadataBody) {
  auto res = client_->Post(("/resumable" + upload_base() + "?uploadType=resumable").c_str(),
                           R"({"name":"from-body","contentType":"image/png"})", "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const std::string session = res->get_header_value("Location").substr(emu_->endpoint().size());
  res = client_->Put(session.c_str(), "png!", "image/png");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json_string(res->body, "name"), "from-body");
  EXPECT_EQ(json_string(res->body, "contentType"), "image/png");
}

TEST_F(UploadTest, WithoutMd5ObjectsHaveOnlyACrc32c) {
  EmulatorOptions options;
  options.compute_md5 = false;
  emu_.reset();
  start(options);
  auto res = client_->Post((upload_base() + "?uploadType=media&name=no-md5").c_str(), "payload",
                           "application/octet-stream");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto doc = parse_json(res->body);
  EXPECT_FALSE(doc.HasMember("md5Hash"));
  EXPECT_STREQ(doc["crc32c"].GetString(), crc32c_to_base64(crc32c("payload")).c_str());
  // An MD5 the client sends is still checked.
  res = multipart(R"({"name":"bad-md5","md5Hash":"XrY7u+Ae7tCTyyK7j1rNww=="})", "payload");
  EXPECT_EQ(res->status, 400);
}

TEST_F(UploadTest, BodiesAboveTheLimitGet413) {
  EmulatorOptions options;
  options.max_object_bytes = 1000;
  emu_.reset();
  start(options);
  auto res = client_->Post((upload_base() + "?uploadType=media&name=big").c_str(),
                           std::string(1001, 'x'), "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_EQ(error_reason(res->body), "uploadTooLarge");
  res = client_->Post((upload_base() + "?uploadType=media&name=ok").c_str(), std::string(1000, 'x'),
                      "application/octet-stream");
  EXPECT_EQ(res->status, 200);
  const std::string session = start_session("r");
  res = put(session, "bytes 0-1000/1001", std::string(1001, 'x'));
  EXPECT_EQ(res->status, 413);
  res = client_->Post((upload_base() + "?uploadType=resumable&name=x").c_str(),
                      {{"X-Upload-Content-Length", "5000"}}, "", "application/json");
  EXPECT_EQ(res->status, 413);

  // An absurd Content-Length is refused before any body is read.
  const std::string reply = raw_request("POST " + upload_base() +
                                        "?uploadType=media&name=x HTTP/1.1\r\nHost: x\r\n"
                                        "Content-Length: 99999999999999999999\r\n\r\ntiny");
  EXPECT_EQ(reply.rfind("HTTP/1.1 413", 0), 0u) << reply;
}

}  // namespace
}  // namespace dataflux::emulator::testing
