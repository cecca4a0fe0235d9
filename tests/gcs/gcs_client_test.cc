// GcsClient without a server: headers, credentials hints, option normalisation.
#include "gcs/gcs_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dataflux::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

HttpResponse response_with(long http_status, std::string body) {
  HttpResponse r;
  r.http_status = http_status;
  r.body = std::move(body);
  return r;
}

TEST(GcsClient, UserAgentAndAuthorization) {
  GcsOptions options;
  options.endpoint = "https://storage.googleapis.com";
  options.user_agent_suffix = "my-trainer/2";
  options.credentials = make_access_token_credentials("tok123");
  auto client = GcsClient::create(options).value();
  HttpRequest request = client->new_request("GET", "/storage/v1/b/b/o");
  EXPECT_EQ(request.url, "https://storage.googleapis.com/storage/v1/b/b/o");
  EXPECT_THAT(request.headers,
              ::testing::Contains(Pair("User-Agent", "dataflux-cpp/0.1.0 my-trainer/2")));
  ASSERT_TRUE(client->authorize(request).ok());
  EXPECT_THAT(request.headers, ::testing::Contains(Pair("Authorization", "Bearer tok123")));

  // An error names the operation and the server's message, never the token.
  auto status =
      client->check(response_with(401, R"({"error":{"code":401,"message":"Invalid Credentials"}})"),
                    "GET gs://b/o");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(status.message()), HasSubstr("GET gs://b/o"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("Invalid Credentials"));
  EXPECT_THAT(std::string(status.message()), Not(HasSubstr("tok123")));
  EXPECT_THAT(std::string(status.message()), Not(HasSubstr("no credentials")));
}

TEST(GcsClient, MissingCredentialsAreNamedOnAuthErrors) {
  // No credentials configured: Application Default Credentials, which find nothing here.
  GcsOptions options;
  options.endpoint = "https://storage.googleapis.com";
  options.auth.credentials_file = "/nonexistent/dataflux-test-sa.json";
  auto client = GcsClient::create(options).value();
  HttpRequest request = client->new_request("GET", "/x");
  auto auth = client->authorize(request);
  EXPECT_EQ(auth.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(auth.message()), HasSubstr("/nonexistent/dataflux-test-sa.json"));
  for (long code : {401L, 403L}) {
    auto status = client->check(response_with(code, "denied"), "GET gs://b/o");
    EXPECT_THAT(std::string(status.message()), HasSubstr("no credentials were configured"));
  }
  EXPECT_THAT(std::string(client->check(response_with(404, ""), "GET gs://b/o").message()),
              Not(HasSubstr("credentials")));
}

TEST(GcsClient, AnonymousSendsNoCredentials) {
  GcsOptions options;
  options.endpoint = "http://127.0.0.1:1";
  options.anonymous = true;
  auto client = GcsClient::create(options).value();
  HttpRequest request = client->new_request("GET", "/x");
  ASSERT_TRUE(client->authorize(request).ok());
  for (const auto& header : request.headers) EXPECT_NE(header.first, "Authorization");
  auto status = client->check(response_with(403, "denied"), "GET gs://b/o");
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(status.message()), Not(HasSubstr("credentials")));
}

TEST(GcsClient, ChunkSizeRoundsUpToTheQuantum) {
  GcsOptions options;
  options.endpoint = "http://127.0.0.1:1";
  options.resumable_chunk_size = (256 << 10) + 1;
  EXPECT_EQ(GcsClient::create(options).value()->options().resumable_chunk_size, 512u << 10);
  options.resumable_chunk_size = 0;
  EXPECT_EQ(GcsClient::create(options).value()->options().resumable_chunk_size, 256u << 10);
  options.resumable_chunk_size = 8 << 20;
  EXPECT_EQ(GcsClient::create(options).value()->options().resumable_chunk_size, 8u << 20);
}

TEST(GcsClient, RejectsBadOptions) {
  GcsOptions options;
  options.endpoint = "ftp://example.com";
  EXPECT_EQ(GcsClient::create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.endpoint = "http://127.0.0.1:1";
  options.retry.max_attempts = 0;
  EXPECT_EQ(GcsClient::create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.retry.max_attempts = 1;
  options.anonymous = true;
  options.credentials = make_access_token_credentials("tok");
  EXPECT_THAT(std::string(GcsClient::create(options).status().message()),
              HasSubstr("anonymous and credentials are both set"));
}

TEST(GcsClient, TransportFailuresKeepTheirCode) {
  GcsOptions options;
  options.endpoint = "http://127.0.0.1:1";
  auto client = GcsClient::create(options).value();
  HttpResponse r;
  r.status = absl::UnavailableError("connection refused");
  auto status = client->check(r, "LIST gs://b/p");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), HasSubstr("LIST gs://b/p"));
}

}  // namespace
}  // namespace dataflux::internal
