// Buckets and objects over HTTP: metadata, media and ranges, generations and preconditions,
// listing, compose, copy, rewrite, patch, delete, odd names and bad input.
#include <gtest/gtest.h>

#include <string>

#include "core/sigv4.h"
#include "dataflux/crc32c.h"
#include "emulator/emulator_fixture.h"

namespace dataflux::emulator::testing {
namespace {

using ::dataflux::internal::md5_base64_of;
using ::dataflux::internal::md5_hex_of;

TEST_F(EmulatorTest, BucketLifecycle) {
  auto res =
      client_->Post("/storage/v1/b?project=p1", R"({"name":"new-bucket"})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json_string(res->body, "name"), "new-bucket");
  res = client_->Post("/storage/v1/b?project=p1", R"({"name":"new-bucket"})", "application/json");
  EXPECT_EQ(res->status, 409);
  res = client_->Post("/storage/v1/b?project=p1", R"({"name":)", "application/json");
  EXPECT_EQ(res->status, 400);
  res = client_->Get("/storage/v1/b/new-bucket");
  EXPECT_EQ(res->status, 200);
  res = client_->Get("/storage/v1/b?project=p1");
  ASSERT_EQ(res->status, 200);
  auto doc = parse_json(res->body);
  ASSERT_EQ(doc["items"].Size(), 1u);  // test-bucket belongs to the default project
  EXPECT_STREQ(doc["items"][0]["name"].GetString(), "new-bucket");

  // A bucket with an object cannot be deleted.
  ASSERT_TRUE(emu_->put_object("new-bucket", "o", "x").ok());
  res = client_->Delete("/storage/v1/b/new-bucket");
  EXPECT_EQ(res->status, 409);
  EXPECT_EQ(client_->Delete("/storage/v1/b/new-bucket/o/o")->status, 204);
  EXPECT_EQ(client_->Delete("/storage/v1/b/new-bucket")->status, 204);
  res = client_->Get("/storage/v1/b/new-bucket");
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(error_reason(res->body), "notFound");
}

TEST_F(EmulatorTest, MetadataAndMediaWithHashes) {
  const std::string data = "hello world";
  std::string resource = upload("greeting.txt", data);
  auto doc = parse_json(resource);
  ASSERT_TRUE(doc.IsObject());
  EXPECT_STREQ(doc["kind"].GetString(), "storage#object");
  EXPECT_STREQ(doc["size"].GetString(), "11");  // a JSON string, as on GCS
  EXPECT_STREQ(doc["md5Hash"].GetString(), "XrY7u+Ae7tCTyyK7j1rNww==");
  EXPECT_EQ(doc["crc32c"].GetString(), crc32c_to_base64(crc32c(data)));
  EXPECT_STREQ(doc["storageClass"].GetString(), "STANDARD");
  const std::string generation = doc["generation"].GetString();

  auto meta = client_->Get(object_path("greeting.txt").c_str());
  ASSERT_TRUE(meta);
  EXPECT_EQ(json_string(meta->body, "generation"), generation);
  EXPECT_EQ(json_string(meta->body, "metageneration"), "1");

  for (const std::string& path : {object_path("greeting.txt") + "?alt=media",
                                  "/download" + object_path("greeting.txt") + "?alt=media"}) {
    auto media = client_->Get(path.c_str());
    ASSERT_TRUE(media) << path;
    EXPECT_EQ(media->status, 200);
    EXPECT_EQ(media->body, data);
    EXPECT_EQ(media->get_header_value("x-goog-hash"),
              "crc32c=" + crc32c_to_base64(crc32c(data)) + ",md5=XrY7u+Ae7tCTyyK7j1rNww==");
    EXPECT_EQ(media->get_header_value("x-goog-generation"), generation);
    EXPECT_EQ(media->get_header_value("x-goog-metageneration"), "1");
    EXPECT_EQ(media->get_header_value("x-goog-stored-content-length"), "11");
    EXPECT_EQ(media->get_header_value("Content-Length"), "11");
  }
}

TEST_F(EmulatorTest, Ranges) {
  upload("r", "0123456789");
  const std::string path = object_path("r") + "?alt=media";
  struct Case {
    const char* range;
    int status;
    const char* body;
    const char* content_range;
  };
  for (const Case& c :
       {Case{"bytes=2-4", 206, "234", "bytes 2-4/10"}, Case{"bytes=7-", 206, "789", "bytes 7-9/10"},
        Case{"bytes=-2", 206, "89", "bytes 8-9/10"},
        Case{"bytes=5-99", 206, "56789", "bytes 5-9/10"},
        Case{"bytes=10-", 416, nullptr, "bytes */10"},
        Case{"bytes=-0", 416, nullptr, "bytes */10"}}) {
    auto res = client_->Get(path.c_str(), {{"Range", c.range}});
    ASSERT_TRUE(res) << c.range;
    EXPECT_EQ(res->status, c.status) << c.range;
    EXPECT_EQ(res->get_header_value("Content-Range"), c.content_range) << c.range;
    if (c.body != nullptr) {
      EXPECT_EQ(res->body, c.body) << c.range;
    }
    if (c.status == 416) {
      EXPECT_EQ(error_reason(res->body), "requestedRangeNotSatisfiable");
    }
  }
  // Malformed ranges are refused too (by us or by httplib's own parser).
  auto res = client_->Get(path.c_str(), {{"Range", "bytes=9-3"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 416);
}

TEST_F(EmulatorTest, GenerationsAndPreconditions) {
  const std::string g1 = json_string(upload("p", "one"), "generation");
  const std::string g2 = json_string(upload("p", "two"), "generation");
  EXPECT_LT(std::stoll(g1), std::stoll(g2));
  const std::string path = object_path("p");
  EXPECT_EQ(client_->Get((path + "?alt=media&generation=" + g2).c_str())->body, "two");
  EXPECT_EQ(client_->Get((path + "?alt=media&generation=" + g1).c_str())->status, 404);
  EXPECT_EQ(client_->Get((path + "?ifGenerationMatch=" + g1).c_str())->status, 412);
  EXPECT_EQ(client_->Get((path + "?ifGenerationMatch=" + g2).c_str())->status, 200);
  EXPECT_EQ(client_->Get((path + "?ifMetagenerationMatch=2").c_str())->status, 412);
  EXPECT_EQ(client_->Get((path + "?generation=abc").c_str())->status, 400);

  // Uploads: 0 = must not exist; a wrong generation fails; the right one succeeds.
  auto post = [&](const std::string& query) {
    return client_
        ->Post(
            ("/upload/storage/v1/b/" + std::string(kBucket) + "/o?uploadType=media&name=p" + query)
                .c_str(),
            "three", "text/plain")
        ->status;
  };
  EXPECT_EQ(post("&ifGenerationMatch=0"), 412);
  EXPECT_EQ(post("&ifGenerationMatch=" + g1), 412);
  EXPECT_EQ(post("&ifGenerationNotMatch=" + g2), 412);
  EXPECT_EQ(post("&ifMetagenerationMatch=7"), 412);
  EXPECT_EQ(post("&ifGenerationMatch=" + g2), 200);
  EXPECT_EQ(emu_->get_object_data(kBucket, "p").value(), "three");
  auto res = client_->Post(("/upload/storage/v1/b/" + std::string(kBucket) +
                            "/o?uploadType=media&name=fresh&ifGenerationMatch=0")
                               .c_str(),
                           "new", "text/plain");
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json_string(res->body, "contentType"), "text/plain");
}

TEST_F(EmulatorTest, DeleteAndPatch) {
  const std::string g = json_string(upload("d", "x"), "generation");
  const std::string path = object_path("d");
  EXPECT_EQ(client_->Delete((path + "?ifGenerationMatch=1").c_str())->status, 412);
  EXPECT_EQ(client_->Delete((path + "?generation=1").c_str())->status, 404);

  auto res = client_->Patch((path + "?ifMetagenerationMatch=1").c_str(),
                            R"({"contentType":"text/csv","metadata":{"k":"v","gone":null}})",
                            "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto doc = parse_json(res->body);
  EXPECT_STREQ(doc["metageneration"].GetString(), "2");
  EXPECT_STREQ(doc["contentType"].GetString(), "text/csv");
  EXPECT_STREQ(doc["metadata"]["k"].GetString(), "v");
  EXPECT_EQ(doc["generation"].GetString(), g);  // patch keeps the generation
  EXPECT_EQ(
      client_->Patch((path + "?ifMetagenerationMatch=1").c_str(), "{}", "application/json")->status,
      412);
  EXPECT_EQ(client_->Patch(path.c_str(), "{not json", "application/json")->status, 400);

  EXPECT_EQ(client_->Delete((path + "?ifGenerationMatch=" + g).c_str())->status, 204);
  EXPECT_EQ(client_->Get(path.c_str())->status, 404);
  EXPECT_EQ(client_->Delete(path.c_str())->status, 404);
}

TEST_F(EmulatorTest, ListingWithPrefixDelimiterOffsetsAndPages) {
  for (const char* name : {"a/1", "a/2", "a/b/3", "a/c/", "b", "c/4", "d"}) {
    ASSERT_TRUE(emu_->put_object(kBucket, name, name).ok());
  }
  const std::string base = "/storage/v1/b/" + std::string(kBucket) + "/o";
  auto names = [](const std::string& body, const char* member) {
    std::vector<std::string> out;
    auto doc = parse_json(body);
    if (!doc.HasMember(member)) return out;
    for (const auto& v : doc[member].GetArray()) {
      out.push_back(v.IsString() ? v.GetString() : v["name"].GetString());
    }
    return out;
  };
  auto res = client_->Get((base + "?delimiter=/").c_str());
  EXPECT_EQ(names(res->body, "items"), (std::vector<std::string>{"b", "d"}));
  EXPECT_EQ(names(res->body, "prefixes"), (std::vector<std::string>{"a/", "c/"}));
  res = client_->Get((base + "?prefix=a/&delimiter=/").c_str());
  EXPECT_EQ(names(res->body, "items"), (std::vector<std::string>{"a/1", "a/2"}));
  EXPECT_EQ(names(res->body, "prefixes"), (std::vector<std::string>{"a/b/", "a/c/"}));
  res = client_->Get((base + "?prefix=a/&delimiter=/&includeTrailingDelimiter=true").c_str());
  EXPECT_EQ(names(res->body, "items"), (std::vector<std::string>{"a/1", "a/2", "a/c/"}));
  res = client_->Get((base + "?startOffset=a/2&endOffset=c").c_str());
  EXPECT_EQ(names(res->body, "items"), (std::vector<std::string>{"a/2", "a/b/3", "a/c/", "b"}));
  res = client_->Get((base + "?fields=items(name),nextPageToken").c_str());
  EXPECT_EQ(names(res->body, "items").size(), 7u);
  {  // only what was selected comes back, as GCS's partial responses do
    auto doc = parse_json(res->body);
    EXPECT_FALSE(doc.HasMember("kind"));
    for (const auto& item : doc["items"].GetArray()) {
      EXPECT_EQ(item.MemberCount(), 1u);
    }
  }
  res = client_->Get((base + "?fields=items(name,size,crc32c)&maxResults=1").c_str());
  {
    auto doc = parse_json(res->body);
    EXPECT_FALSE(doc.HasMember("nextPageToken"));  // not selected, though there are more
    ASSERT_EQ(doc["items"].Size(), 1u);
    const auto& item = doc["items"][0];
    EXPECT_EQ(item.MemberCount(), 3u);
    EXPECT_STREQ(item["size"].GetString(), "3");
    EXPECT_TRUE(item.HasMember("crc32c"));
  }
  res = client_->Get((base + "/b?fields=name,generation").c_str());
  EXPECT_EQ(parse_json(res->body).MemberCount(), 2u);
  res = client_->Get((base + "?fields=items(name").c_str());
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("Invalid field selection"), std::string::npos) << res->body;

  // Pages of 2 with a delimiter: prefixes count as entries and are never repeated.
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    std::string url = base + "?delimiter=/&maxResults=2";
    if (!token.empty()) url += "&pageToken=" + token;
    res = client_->Get(url.c_str());
    ASSERT_EQ(res->status, 200) << res->body;
    for (auto& n : names(res->body, "prefixes")) seen.push_back(n);
    for (auto& n : names(res->body, "items")) seen.push_back(n);
    token = json_string(res->body, "nextPageToken");
    ASSERT_LT(++pages, 10);
  } while (!token.empty());
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"a/", "b", "c/", "d"}));
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(client_->Get((base + "?pageToken=%%%").c_str())->status, 400);
  EXPECT_EQ(client_->Get((base + "?maxResults=0").c_str())->status, 400);
  EXPECT_EQ(client_->Get("/storage/v1/b/missing/o")->status, 404);
}

TEST_F(EmulatorTest, ListingCapsPagesAtOneThousandInByteOrder) {
  for (int i = 0; i < 1205; ++i) {
    ASSERT_TRUE(emu_->put_object(kBucket, "k" + std::to_string(i), "").ok());
  }
  ASSERT_TRUE(emu_->put_object(kBucket, "\xc3\xa9", "").ok());  // é sorts after ASCII bytes
  ASSERT_TRUE(emu_->put_object(kBucket, "Z", "").ok());
  const std::string base = "/storage/v1/b/" + std::string(kBucket) + "/o?maxResults=5000";
  auto res = client_->Get(base.c_str());
  auto doc = parse_json(res->body);
  ASSERT_EQ(doc["items"].Size(), 1000u);
  EXPECT_STREQ(doc["items"][0]["name"].GetString(), "Z");
  res =
      client_->Get((base + "&pageToken=" + std::string(doc["nextPageToken"].GetString())).c_str());
  auto doc2 = parse_json(res->body);
  ASSERT_EQ(doc2["items"].Size(), 207u);
  EXPECT_STREQ(doc2["items"][206]["name"].GetString(), "\xc3\xa9");
  EXPECT_FALSE(doc2.HasMember("nextPageToken"));
}

TEST_F(EmulatorTest, OddObjectNames) {
  struct Name {
    std::string raw;
    std::string encoded;
  };
  for (const Name& n : {Name{"with space", "with%20space"}, Name{"a+b", "a%2Bb"},
                        Name{"100%", "100%25"}, Name{"dir/sub/file", "dir%2Fsub%2Ffile"},
                        Name{"h\xc3\xa9llo \xe2\x9c\x93", "h%C3%A9llo%20%E2%9C%93"},
                        Name{"hash#tag?q=1", "hash%23tag%3Fq%3D1"}}) {
    const std::string resource = upload(n.encoded, n.raw);
    EXPECT_EQ(json_string(resource, "name"), n.raw);
    auto media = client_->Get((object_path(n.encoded) + "?alt=media").c_str());
    ASSERT_TRUE(media);
    EXPECT_EQ(media->status, 200) << n.raw;
    EXPECT_EQ(media->body, n.raw);
    EXPECT_EQ(emu_->get_object_data(kBucket, n.raw).value(), n.raw);
  }
  // A raw (unescaped) slash in the path works as well.
  EXPECT_EQ(client_->Get((object_path("dir/sub/file") + "?alt=media").c_str())->body,
            "dir/sub/file");
  EXPECT_EQ(client_->Get((object_path("bad%zz")).c_str())->status, 400);
}

// A composed object shares its sources' bytes (no copy): reads at any offset, across source
// boundaries, of a composite of composites, and after the sources are deleted, are exact.
TEST_F(EmulatorTest, ComposedBytesReadExactlyAcrossBoundaries) {
  upload("s1", "0123");
  upload("s2", "");
  upload("s3", "456789");
  auto compose = [&](const std::string& destination, const std::string& sources) {
    auto res = client_->Post((object_path(destination) + "/compose").c_str(),
                             R"({"sourceObjects":[)" + sources + "]}", "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
  };
  compose("inner", R"({"name":"s1"},{"name":"s2"},{"name":"s3"})");
  compose("outer", R"({"name":"inner"},{"name":"s1"})");
  for (const char* name : {"s1", "s2", "s3", "inner"}) {
    EXPECT_EQ(client_->Delete(object_path(name).c_str())->status, 204) << name;
  }
  EXPECT_EQ(emu_->get_object_data(kBucket, "outer").value(), "01234567890123");
  const std::string path = object_path("outer") + "?alt=media";
  struct Case {
    const char* range;
    const char* body;
  } cases[] = {{"bytes=3-4", "34"},
               {"bytes=2-11", "2345678901"},
               {"bytes=9-", "90123"},
               {"bytes=-3", "123"}};
  for (const auto& c : cases) {
    auto res = client_->Get(path.c_str(), {{"Range", c.range}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 206) << c.range;
    EXPECT_EQ(res->body, c.body) << c.range;
  }
}

TEST_F(EmulatorTest, Compose) {
  upload("c1", "abc");
  upload("c2", "defg");
  const std::string g1 = json_string(client_->Get(object_path("c1").c_str())->body, "generation");
  const std::string path = object_path("both") + "/compose";
  auto res = client_->Post(
      path.c_str(),
      R"({"sourceObjects":[{"name":"c1","objectPreconditions":{"ifGenerationMatch":")" + g1 +
          R"("}},{"name":"c2"}],"destination":{"contentType":"text/plain"}})",
      "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto doc = parse_json(res->body);
  EXPECT_EQ(doc["crc32c"].GetString(), crc32c_to_base64(crc32c("abcdefg")));
  EXPECT_EQ(doc["componentCount"].GetInt(), 2);
  EXPECT_FALSE(doc.HasMember("md5Hash"));
  EXPECT_STREQ(doc["contentType"].GetString(), "text/plain");
  EXPECT_EQ(emu_->get_object_data(kBucket, "both").value(), "abcdefg");
  auto media = client_->Get((object_path("both") + "?alt=media").c_str());
  EXPECT_EQ(media->get_header_value("x-goog-hash"),
            "crc32c=" + crc32c_to_base64(crc32c("abcdefg")));

  auto compose = [&](const std::string& body, const std::string& query = "") {
    return client_->Post((path + query).c_str(), body, "application/json")->status;
  };
  // A JSON null is an absent member (Google's Python client sends "generation": null).
  EXPECT_EQ(compose(R"({"sourceObjects":[{"name":"c1","generation":null,)"
                    R"("objectPreconditions":{"ifGenerationMatch":null}},{"name":"c2"}]})"),
            200);
  EXPECT_EQ(emu_->get_object_data(kBucket, "both").value(), "abcdefg");
  EXPECT_EQ(compose(R"({"sourceObjects":[{"name":"c1","generation":true}]})"), 400);
  EXPECT_EQ(compose(R"({"sourceObjects":[{"name":"missing"}]})"), 404);
  EXPECT_EQ(compose(R"({"sourceObjects":[{"name":"c1","generation":"1"}]})"), 412);
  EXPECT_EQ(
      compose(R"({"sourceObjects":[{"name":"c1","objectPreconditions":{"ifGenerationMatch":1}}]})"),
      412);
  EXPECT_EQ(compose(R"({"sourceObjects":[{"name":"c1"}]})", "?ifGenerationMatch=0"), 412);
  EXPECT_EQ(compose(R"({"sourceObjects":[]})"), 400);
  EXPECT_EQ(compose(R"({"sourceObjects":"x"})"), 400);
  EXPECT_EQ(compose("{truncated"), 400);
  std::string many = R"({"sourceObjects":[)";
  for (int i = 0; i < 33; ++i) many += std::string(i ? "," : "") + R"({"name":"c1"})";
  EXPECT_EQ(compose(many + "]}"), 400);
  many = R"({"sourceObjects":[)";
  for (int i = 0; i < 32; ++i) many += std::string(i ? "," : "") + R"({"name":"c2"})";
  EXPECT_EQ(compose(many + "]}"), 200);
  EXPECT_EQ(emu_->get_object_data(kBucket, "both").value().size(), 128u);
}

TEST_F(EmulatorTest, CopyAndRewrite) {
  ASSERT_TRUE(emu_->create_bucket("other-bucket").ok());
  const std::string g = json_string(upload("src", "payload"), "generation");
  auto res = client_->Post(
      (object_path("src") + "/copyTo/b/other-bucket/o/dst%2Fcopy?sourceGeneration=" + g).c_str(),
      "", "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json_string(res->body, "bucket"), "other-bucket");
  EXPECT_EQ(json_string(res->body, "name"), "dst/copy");
  EXPECT_EQ(emu_->get_object_data("other-bucket", "dst/copy").value(), "payload");

  res = client_->Post((object_path("src") + "/rewriteTo/b/" + kBucket + "/o/rw").c_str(),
                      R"({"contentType":"text/x-rw"})", "application/json");
  ASSERT_EQ(res->status, 200) << res->body;
  auto doc = parse_json(res->body);
  EXPECT_STREQ(doc["kind"].GetString(), "storage#rewriteResponse");
  EXPECT_TRUE(doc["done"].GetBool());
  EXPECT_STREQ(doc["resource"]["name"].GetString(), "rw");
  EXPECT_STREQ(doc["resource"]["contentType"].GetString(), "text/x-rw");
  EXPECT_EQ(emu_->get_object_data(kBucket, "rw").value(), "payload");

  EXPECT_EQ(
      client_
          ->Post((object_path("src") + "/rewriteTo/b/" + kBucket + "/o/rw?ifGenerationMatch=0")
                     .c_str(),
                 "", "application/json")
          ->status,
      412);
  EXPECT_EQ(
      client_
          ->Post((object_path("src") + "/copyTo/b/" + kBucket + "/o/x?sourceGeneration=1").c_str(),
                 "", "application/json")
          ->status,
      404);
  EXPECT_EQ(client_
                ->Post((object_path("nope") + "/copyTo/b/" + kBucket + "/o/x").c_str(), "",
                       "application/json")
                ->status,
            404);
  EXPECT_EQ(
      client_
          ->Post((object_path("src") + "/copyTo/b/no-bucket/o/x").c_str(), "", "application/json")
          ->status,
      404);
}

// buckets.getStorageLayout (gcloud storage cp -r asks first) and buckets.testIamPermissions
// (clients ask before they compose), as GCS's JSON API reference describes them.
TEST_F(EmulatorTest, StorageLayoutAndTestIamPermissions) {
  const std::string bucket = std::string("/storage/v1/b/") + kBucket;
  auto res = client_->Get((bucket + "/storageLayout").c_str());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto doc = parse_json(res->body);
  EXPECT_STREQ(doc["kind"].GetString(), "storage#storageLayout");
  EXPECT_STREQ(doc["bucket"].GetString(), kBucket);
  EXPECT_STREQ(doc["location"].GetString(), "US");
  EXPECT_FALSE(doc["hierarchicalNamespace"]["enabled"].GetBool());
  res = client_->Get("/storage/v1/b/no-such-bucket/storageLayout");
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(error_reason(res->body), "notFound");

  res = client_->Get((bucket +
                      "/iam/testPermissions?permissions=storage.objects.create&permissions=storage."
                      "objects.delete")
                         .c_str());
  ASSERT_EQ(res->status, 200) << res->body;
  doc = parse_json(res->body);
  EXPECT_STREQ(doc["kind"].GetString(), "storage#testIamPermissionsResponse");
  ASSERT_EQ(doc["permissions"].Size(), 2u);
  EXPECT_STREQ(doc["permissions"][0].GetString(), "storage.objects.create");
  EXPECT_STREQ(doc["permissions"][1].GetString(), "storage.objects.delete");
  EXPECT_EQ(client_->Get((bucket + "/iam/testPermissions").c_str())->status, 400);
  EXPECT_EQ(client_->Get("/storage/v1/b/no-such-bucket/iam/testPermissions?permissions=x")->status,
            404);
  EXPECT_EQ(emu_->request_count("buckets.getStorageLayout"), 2u);
  EXPECT_EQ(emu_->request_count("buckets.testIamPermissions"), 3u);
}

// GCS's XML multipart API: an uploaded part is answered with its CRC32C and MD5 in
// x-goog-hash, and a part whose x-goog-hash does not match what arrived is refused.
TEST_F(EmulatorTest, XmlMultipartPartsAnswerWithTheirHashes) {
  const std::string key = std::string("/") + kBucket + "/xml/object";
  auto res = client_->Post((key + "?uploads").c_str(), "", "application/octet-stream");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const std::size_t open = res->body.find("<UploadId>");
  const std::size_t close = res->body.find("</UploadId>");
  ASSERT_NE(close, std::string::npos) << res->body;
  const std::string id = res->body.substr(open + 10, close - open - 10);
  const std::string part = key + "?partNumber=1&uploadId=" + id;
  const std::string data = "part one bytes";
  res = client_->Put(part.c_str(), data, "application/octet-stream");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("x-goog-hash"),
            "crc32c=" + crc32c_to_base64(crc32c(data)) + ",md5=" + md5_base64_of(data));
  EXPECT_EQ(res->get_header_value("ETag"), "\"" + md5_hex_of(data) + "\"");

  httplib::Headers matching = {{"x-goog-hash", "crc32c=" + crc32c_to_base64(crc32c(data))},
                               {"x-goog-hash", "md5=" + md5_base64_of(data)}};
  EXPECT_EQ(client_->Put(part.c_str(), matching, data, "application/octet-stream")->status, 200);
  httplib::Headers wrong = {{"x-goog-hash", "crc32c=" + crc32c_to_base64(crc32c("other"))}};
  res = client_->Put(part.c_str(), wrong, data, "application/octet-stream");
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("BadDigest"), std::string::npos) << res->body;
  wrong = {{"x-goog-hash", "md5=" + md5_base64_of("other")}};
  EXPECT_EQ(client_->Put(part.c_str(), wrong, data, "application/octet-stream")->status, 400);
}

TEST_F(EmulatorTest, UnknownRoutesGetGcsShapedNotFound) {
  auto res = client_->Get("/storage/v1/nothing/here");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(error_reason(res->body), "notFound");
  EXPECT_EQ(emu_->request_count("unknown"), 1u);
  res = client_->Put("/storage/v1/b", "x", "text/plain");
  EXPECT_EQ(res->status, 404);
}

TEST_F(EmulatorTest, StorageDirKeepsBytesInFiles) {
  char dir_template[] = "/tmp/dataflux-emu-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  EmulatorOptions options;
  options.storage_dir = dir_template;
  emu_.reset();
  start(options);
  std::string big(3 << 20, 'q');
  big[12345] = 'Z';
  upload("big", big);
  auto media =
      client_->Get((object_path("big") + "?alt=media").c_str(), {{"Range", "bytes=12340-12349"}});
  ASSERT_TRUE(media);
  EXPECT_EQ(media->body, "qqqqqZqqqq");
  EXPECT_EQ(client_->Get((object_path("big") + "?alt=media").c_str())->body, big);
  EXPECT_EQ(emu_->get_object_data(kBucket, "big").value(), big);
  emu_.reset();  // files go with the emulator
  EXPECT_EQ(rmdir(dir_template), 0);
}

TEST(EmulatorStartTest, RefusesNonLoopbackHosts) {
  EmulatorOptions options;
  options.host = "0.0.0.0";
  EXPECT_EQ(Emulator::start(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.host = "8.8.8.8";
  EXPECT_FALSE(Emulator::start(options).ok());
  options.host = "127.0.0.1";
  auto emu = Emulator::start(options);
  ASSERT_TRUE(emu.ok());
  EXPECT_GT((*emu)->port(), 0);
  EXPECT_EQ((*emu)->endpoint(), "http://127.0.0.1:" + std::to_string((*emu)->port()));
}

}  // namespace
}  // namespace dataflux::emulator::testing
