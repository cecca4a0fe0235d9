// Credentials, region, endpoint and addressing resolution, XML parsing, listing math and S3
// error mapping: pure functions, no server.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "s3/s3_client.h"
#include "s3/s3_config.h"
#include "s3/s3_list.h"
#include "s3/s3_multipart.h"
#include "s3/s3_xml.h"

namespace dataflux::internal {
namespace {

using ::testing::HasSubstr;

Environment env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

class TempHome : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dataflux_s3_home_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    home_ = tmpl;
    std::filesystem::create_directories(home_ + "/.aws");
  }
  void TearDown() override { std::filesystem::remove_all(home_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(home_ + "/.aws/" + name) << text;
  }
  std::string home_;
};

TEST_F(TempHome, OptionsWinOverEnvironmentAndFiles) {
  S3Options o;
  o.access_key_id = "AKOPT";
  o.secret_access_key = "opt-secret";
  o.region = "eu-west-1";
  auto c = resolve_s3_config(
      o, env_of({{"HOME", home_}, {"AWS_ACCESS_KEY_ID", "AKENV"}, {"AWS_SECRET_ACCESS_KEY", "e"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credentials.access_key_id, "AKOPT");
  EXPECT_EQ(c->region, "eu-west-1");
  EXPECT_EQ(c->endpoint, "https://s3.eu-west-1.amazonaws.com");
  EXPECT_TRUE(c->aws_endpoint);
  o.secret_access_key.clear();
  EXPECT_EQ(resolve_s3_config(o, env_of({{"HOME", home_}})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(TempHome, EnvironmentCredentialsRegionAndEndpoint) {
  auto c = resolve_s3_config(S3Options{}, env_of({{"HOME", home_},
                                                  {"AWS_ACCESS_KEY_ID", "AKENV"},
                                                  {"AWS_SECRET_ACCESS_KEY", "env-secret"},
                                                  {"AWS_SESSION_TOKEN", "tok"},
                                                  {"AWS_DEFAULT_REGION", "ap-south-1"},
                                                  {"AWS_ENDPOINT_URL", "minio.local:9000/"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credentials.access_key_id, "AKENV");
  EXPECT_EQ(c->credentials.session_token, "tok");
  EXPECT_EQ(c->region, "ap-south-1");
  EXPECT_EQ(c->endpoint, "https://minio.local:9000");
  EXPECT_FALSE(c->aws_endpoint);
  // AWS_REGION beats AWS_DEFAULT_REGION; AWS_ENDPOINT_URL_S3 beats AWS_ENDPOINT_URL.
  c = resolve_s3_config(S3Options{}, env_of({{"HOME", home_},
                                             {"AWS_ACCESS_KEY_ID", "a"},
                                             {"AWS_SECRET_ACCESS_KEY", "b"},
                                             {"AWS_REGION", "us-west-2"},
                                             {"AWS_DEFAULT_REGION", "ap-south-1"},
                                             {"AWS_ENDPOINT_URL", "http://generic:1"},
                                             {"AWS_ENDPOINT_URL_S3", "http://s3only:2"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->region, "us-west-2");
  EXPECT_EQ(c->endpoint, "http://s3only:2");
}

TEST_F(TempHome, SharedFilesWithAwsProfile) {
  write("credentials",
        "[default]\naws_access_key_id = AKDEF\naws_secret_access_key = def\n"
        "# comment\n[cortx]\n aws_access_key_id=AKCORTX \naws_secret_access_key=cortx-secret\n");
  write("config",
        "[default]\nregion = us-east-2\n[profile cortx]\nregion = cortx-region\n"
        "endpoint_url = http://cortx.local:8000\n");
  auto c = resolve_s3_config(S3Options{}, env_of({{"HOME", home_}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credentials.access_key_id, "AKDEF");
  EXPECT_EQ(c->region, "us-east-2");
  c = resolve_s3_config(S3Options{}, env_of({{"HOME", home_}, {"AWS_PROFILE", "cortx"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credentials.access_key_id, "AKCORTX");
  EXPECT_EQ(c->credentials.secret_access_key, "cortx-secret");
  EXPECT_EQ(c->region, "cortx-region");
  EXPECT_EQ(c->endpoint, "http://cortx.local:8000");
  EXPECT_THAT(c->credentials.source, HasSubstr("profile cortx"));
}

TEST_F(TempHome, NoCredentialsIsAClearErrorUnlessAnonymous) {
  auto c = resolve_s3_config(S3Options{}, env_of({{"HOME", home_}}));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("AWS_ACCESS_KEY_ID"));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("anonymous"));
  S3Options anonymous;
  anonymous.anonymous = true;
  c = resolve_s3_config(anonymous, env_of({{"HOME", home_}}));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->credentials.anonymous);
}

TEST(S3Config, RejectsEndpointsWithPathsOrOtherSchemes) {
  S3Options o;
  o.anonymous = true;
  o.endpoint = "ftp://host";
  EXPECT_EQ(resolve_s3_config(o, env_of({})).status().code(), absl::StatusCode::kInvalidArgument);
  o.endpoint = "http://host/path";
  EXPECT_EQ(resolve_s3_config(o, env_of({})).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(S3Client, PathStyleAndVirtualHostedAddressing) {
  S3Config config;
  config.endpoint = "https://s3.us-east-1.amazonaws.com";
  config.aws_endpoint = true;
  config.region = "us-east-1";
  config.credentials.access_key_id = "AKIAIOSFODNN7EXAMPLE";
  config.credentials.secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  auto fixed = [] { return absl::FromUnixSeconds(1369353600); };  // 2013-05-24T00:00:00Z
  auto client = S3Client::create_for_test(S3Options{}, config, fixed);
  S3Call call;
  call.bucket = "examplebucket";
  call.key = "dir/a b.txt";
  HttpRequest r = client->new_request(call);
  EXPECT_EQ(r.url, "https://examplebucket.s3.us-east-1.amazonaws.com/dir/a%20b.txt");
  std::string auth;
  for (const auto& [k, v] : r.headers) {
    if (k == "Authorization") auth = v;
  }
  EXPECT_THAT(auth,
              HasSubstr("Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"));
  EXPECT_THAT(auth, HasSubstr("SignedHeaders=host;x-amz-content-sha256;x-amz-date"));
  EXPECT_THAT(auth, ::testing::Not(HasSubstr("wJalr")));
  call.bucket = "dotted.bucket";  // not one DNS label under the TLS wildcard: path-style
  EXPECT_EQ(client->new_request(call).url,
            "https://s3.us-east-1.amazonaws.com/dotted.bucket/dir/a%20b.txt");
  config.endpoint = "http://127.0.0.1:9000";
  config.aws_endpoint = false;
  config.credentials.anonymous = true;
  auto minio = S3Client::create_for_test(S3Options{}, config, fixed);
  call.bucket = "b";
  call.query = {{"list-type", "2"}, {"prefix", "a/b c"}};
  call.key.clear();
  HttpRequest list = minio->new_request(call);
  EXPECT_EQ(list.url, "http://127.0.0.1:9000/b?list-type=2&prefix=a%2Fb%20c");
  for (const auto& [k, v] : list.headers) EXPECT_NE(k, "Authorization");  // unsigned
}

TEST(S3Errors, CodesMapToStatuses) {
  using C = absl::StatusCode;
  EXPECT_EQ(status_code_for_s3_error("NoSuchKey", 404), C::kNotFound);
  EXPECT_EQ(status_code_for_s3_error("NoSuchBucket", 404), C::kNotFound);
  EXPECT_EQ(status_code_for_s3_error("AccessDenied", 403), C::kPermissionDenied);
  EXPECT_EQ(status_code_for_s3_error("SlowDown", 503), C::kUnavailable);
  EXPECT_EQ(status_code_for_s3_error("InternalError", 500), C::kUnavailable);
  EXPECT_EQ(status_code_for_s3_error("", 404), C::kNotFound);
  auto s = s3_error_status(
      404, "<Error><Code>NoSuchKey</Code><Message>The key does not exist.</Message></Error>",
      "GET s3://b/k");
  EXPECT_EQ(s.code(), C::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("GET s3://b/k: HTTP 404"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("NoSuchKey: The key does not exist."));
  // An <Error> inside a 200 (CompleteMultipartUpload, CopyObject) is a retryable failure.
  EXPECT_EQ(embedded_error("<Error><Code>InternalError</Code></Error>", "c").code(),
            C::kUnavailable);
  EXPECT_TRUE(embedded_error("<CopyObjectResult/>", "c").ok());
  EXPECT_EQ(s3_error_status(301, "", "GET").code(), C::kFailedPrecondition);
}

TEST(S3Xml, ParsesEscapesAndRejectsMalformedDocuments) {
  auto doc = parse_xml(
      "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Contents><Key>a&amp;b&lt;c</Key></Contents><Contents><Key>d</Key></Contents>"
      "</ListBucketResult>");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->name, "ListBucketResult");
  auto contents = doc->children_named("Contents");
  ASSERT_EQ(contents.size(), 2u);
  EXPECT_EQ(contents[0]->child_text("Key"), "a&b<c");
  EXPECT_EQ(xml_escape("a&b<c>\"'"), "a&amp;b&lt;c&gt;&quot;&apos;");
  EXPECT_EQ(parse_xml("<a><b></a>").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_xml("").status().code(), absl::StatusCode::kInvalidArgument);
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<x>";
  for (int i = 0; i < 100; ++i) deep += "</x>";
  EXPECT_EQ(parse_xml(deep).status().code(), absl::StatusCode::kInvalidArgument);
  // External entities are never loaded (expat does not fetch them).
  auto xxe = parse_xml("<!DOCTYPE a [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><a>&e;</a>");
  EXPECT_TRUE(!xxe.ok() || xxe->text.find("root:") == std::string::npos);
}

TEST(S3List, StartAfterAdmitsTheStartAndTheFilterKeepsTheRange) {
  EXPECT_EQ(start_after_for(""), "");
  std::string s = start_after_for("a/2");
  EXPECT_LT(s, "a/2");
  EXPECT_GT(s, "a/1zzzz");
  EXPECT_LT(start_after_for("\xc3\xa9"), "\xc3\xa9");
  ListObjectsRequest r;
  r.bucket = "b";
  r.start_offset = "k2";
  r.end_offset = "k4";
  auto page = parse_list_page(
      "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t</"
      "NextContinuationToken>"
      "<Contents><Key>k1</Key><Size>1</Size><ETag>\"0123456789abcdef0123456789abcdef\"</ETag>"
      "</Contents><Contents><Key>k2</Key><Size>2</Size></Contents>"
      "<Contents><Key>k3</Key><Size>3</Size><LastModified>2009-10-12T17:50:30.000Z</LastModified>"
      "</Contents><Contents><Key>k4</Key><Size>4</Size></Contents></ListBucketResult>",
      r, "LIST");
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].name, "k2");
  EXPECT_EQ(page->objects[1].size, 3u);
  EXPECT_NE(page->objects[1].updated, std::chrono::system_clock::time_point{});
  EXPECT_TRUE(page->next_page_token.empty());  // past end_offset: the listing is over
  EXPECT_EQ(md5_base64_from_etag("\"0123456789abcdef0123456789abcdef\""),
            "ASNFZ4mrze8BI0VniavN7w==");
  EXPECT_EQ(md5_base64_from_etag("\"0123456789abcdef0123456789abcdef-3\""), "");
  EXPECT_EQ(parse_list_page("<Error/>", r, "LIST").status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(parse_list_page("<ListBucketResult><Contents><Key>k3</Key><Size>x</Size></Contents>"
                            "</ListBucketResult>",
                            r, "LIST")
                .status()
                .code(),
            absl::StatusCode::kInternal);
}

TEST(S3Multipart, CompleteBodyListsPartsInOrder) {
  std::string body = complete_multipart_body({{1, "\"e1\"", "AAAAAA=="}, {2, "\"e<2\"", ""}});
  auto doc = parse_xml(body);
  ASSERT_TRUE(doc.ok()) << doc.status();
  auto parts = doc->children_named("Part");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0]->child_text("PartNumber"), "1");
  EXPECT_EQ(parts[0]->child_text("ChecksumCRC32C"), "AAAAAA==");
  EXPECT_EQ(parts[1]->child_text("ETag"), "\"e<2\"");
  EXPECT_EQ(parts[1]->child("ChecksumCRC32C"), nullptr);
}

}  // namespace
}  // namespace dataflux::internal
