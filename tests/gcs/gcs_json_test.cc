#include "gcs/gcs_json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "dataflux/crc32c.h"
#include "rapidjson/document.h"

namespace dataflux::internal {
namespace {

TEST(ParseObjectResource, ReadsEveryField) {
  auto meta = parse_object_resource(
      R"({"bucket":"bk","name":"a/b.txt","size":"12345678901","generation":"1700000000123456",
          "metageneration":"3","crc32c":")" +
          crc32c_to_base64(0xe3069283) + R"(","md5Hash":"XrY7u+Ae7tCTyyK7j1rNww==",
          "storageClass":"STANDARD","contentType":"text/plain",
          "updated":"2024-05-01T12:34:56.789Z"})",
      "other", "GET gs://bk/a/b.txt");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->bucket, "bk");
  EXPECT_EQ(meta->name, "a/b.txt");
  EXPECT_EQ(meta->size, 12345678901u);
  EXPECT_EQ(meta->generation, 1700000000123456);
  EXPECT_EQ(meta->metageneration, 3);
  ASSERT_TRUE(meta->crc32c.has_value());
  EXPECT_EQ(*meta->crc32c, 0xe3069283u);
  EXPECT_EQ(meta->md5_hash, "XrY7u+Ae7tCTyyK7j1rNww==");
  EXPECT_EQ(meta->storage_class, "STANDARD");
  EXPECT_EQ(meta->content_type, "text/plain");
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(meta->updated.time_since_epoch())
                .count();
  EXPECT_EQ(ms, 1714566896789);
}

TEST(ParseObjectResource, BucketDefaultsAndNumbersAccepted) {
  auto meta = parse_object_resource(R"({"name":"o","size":5,"generation":7})", "bk", "ctx");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->bucket, "bk");
  EXPECT_EQ(meta->size, 5u);
  EXPECT_EQ(meta->generation, 7);
  EXPECT_FALSE(meta->crc32c.has_value());
}

TEST(ParseObjectResource, MalformedInputIsAnErrorNotACrash) {
  const char* cases[] = {
      "",
      "{",
      "not json",
      "[1,2,3]",
      "null",
      R"({"size":"1"})",                                   // no name
      R"({"name":"o","size":"abc"})",                      // size not a number
      R"({"name":"o","size":"-1"})",                       // negative size
      R"({"name":"o","size":{}})",                         // wrong type
      R"({"name":7})",                                     // wrong type
      R"({"name":"o","generation":"1e5"})",                // not an integer
      R"({"name":"o","crc32c":"!!!"})",                    // bad base64
      R"({"name":"o","updated":"yesterday"})",             // bad time
      R"({"name":"o","size":"99999999999999999999999"})",  // overflow
  };
  for (const char* json : cases) {
    auto meta = parse_object_resource(json, "b", "GET gs://b/o");
    EXPECT_FALSE(meta.ok()) << json;
    EXPECT_EQ(meta.status().code(), absl::StatusCode::kInternal) << json;
    EXPECT_NE(meta.status().message().find("GET gs://b/o: malformed JSON"), std::string::npos)
        << meta.status();
  }
}

TEST(ParseListPage, ReadsItemsPrefixesAndToken) {
  auto page = parse_list_page(
      R"({"items":[{"name":"a","size":"1"},{"name":"b","size":"2"}],
          "prefixes":["d1/","d2/"],"nextPageToken":"tok"})",
      "bk", "LIST gs://bk/");
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[1].name, "b");
  EXPECT_EQ(page->objects[1].size, 2u);
  EXPECT_EQ(page->objects[0].bucket, "bk");
  EXPECT_EQ(page->prefixes, (std::vector<std::string>{"d1/", "d2/"}));
  EXPECT_EQ(page->next_page_token, "tok");

  auto empty = parse_list_page("{}", "bk", "LIST");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->objects.empty());
  EXPECT_TRUE(empty->next_page_token.empty());
}

TEST(ParseListPage, Malformed) {
  for (const char* json : {R"({"items":{}})", R"({"items":[1]})", R"({"prefixes":[1]})",
                           R"({"nextPageToken":5})", R"({"items":[{"name":"a"}],)"}) {
    auto page = parse_list_page(json, "bk", "LIST gs://bk/");
    EXPECT_EQ(page.status().code(), absl::StatusCode::kInternal) << json;
  }
}

TEST(ParseRewrite, DoneAndNotDone) {
  auto more = parse_rewrite_response(R"({"done":false,"rewriteToken":"t1"})", "b", "COPY");
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_FALSE(more->done);
  EXPECT_EQ(more->rewrite_token, "t1");
  auto done =
      parse_rewrite_response(R"({"done":true,"resource":{"name":"x","size":"3"}})", "b", "COPY");
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->resource.name, "x");
  EXPECT_FALSE(parse_rewrite_response(R"({"done":true})", "b", "COPY").ok());
  EXPECT_FALSE(parse_rewrite_response(R"({"done":false})", "b", "COPY").ok());
  EXPECT_FALSE(parse_rewrite_response(R"({"rewriteToken":"t"})", "b", "COPY").ok());
}

TEST(ErrorMessage, FromGcsBodyOrRawText) {
  EXPECT_EQ(error_message_from_body(
                R"({"error":{"code":404,"message":"No such object: b/o","errors":[]}})"),
            "No such object: b/o");
  EXPECT_EQ(error_message_from_body("upstream connect error"), "upstream connect error");
  std::string long_body(5000, 'x');
  EXPECT_LT(error_message_from_body(long_body).size(), 400u);
}

TEST(Rfc3339, Parses) {
  EXPECT_TRUE(parse_rfc3339("2024-01-02T03:04:05Z").has_value());
  EXPECT_TRUE(parse_rfc3339("2024-01-02T03:04:05.123456+02:00").has_value());
  EXPECT_FALSE(parse_rfc3339("2024-13-02T03:04:05Z").has_value());
  EXPECT_FALSE(parse_rfc3339("").has_value());
}

TEST(RequestBodies, UploadMetadataAndCompose) {
  rapidjson::Document doc;
  doc.Parse(upload_metadata_json("a \"quoted\"/name", "text/plain", 0x01020304u).c_str());
  ASSERT_TRUE(doc.IsObject());
  EXPECT_STREQ(doc["name"].GetString(), "a \"quoted\"/name");
  EXPECT_STREQ(doc["contentType"].GetString(), "text/plain");
  EXPECT_EQ(crc32c_from_base64(doc["crc32c"].GetString()), 0x01020304u);

  ComposeObjectRequest compose;
  compose.content_type = "application/x-tar";
  compose.sources = {{"p0", 11}, {"p1", std::nullopt}};
  doc.Parse(compose_request_json(compose).c_str());
  ASSERT_TRUE(doc.IsObject());
  EXPECT_STREQ(doc["destination"]["contentType"].GetString(), "application/x-tar");
  const auto& sources = doc["sourceObjects"];
  ASSERT_EQ(sources.Size(), 2u);
  EXPECT_STREQ(sources[0]["name"].GetString(), "p0");
  EXPECT_STREQ(sources[0]["objectPreconditions"]["ifGenerationMatch"].GetString(), "11");
  EXPECT_FALSE(sources[1].HasMember("objectPreconditions"));

  doc.Parse(bucket_resource_json("bk").c_str());
  EXPECT_STREQ(doc["name"].GetString(), "bk");
}

}  // namespace
}  // namespace dataflux::internal
