#include "dataflux/credentials.h"

#include <gtest/gtest.h>

namespace dataflux {
namespace {

TEST(Credentials, AnonymousSendsNoHeader) {
  auto creds = make_anonymous_credentials();
  auto header = creds->authorization_header();
  ASSERT_TRUE(header.ok());
  EXPECT_FALSE(header->has_value());
  creds->on_unauthorized();  // harmless
}

TEST(Credentials, AccessTokenIsABearerHeader) {
  auto creds = make_access_token_credentials("ya29.secret");
  auto header = creds->authorization_header();
  ASSERT_TRUE(header.ok());
  ASSERT_TRUE(header->has_value());
  EXPECT_EQ(**header, "Bearer ya29.secret");
  creds->on_unauthorized();
  EXPECT_EQ(**creds->authorization_header(), "Bearer ya29.secret");
}

TEST(Credentials, RejectedHeaderOverloadDefaultsToOnUnauthorized) {
  struct Counting : Credentials {
    absl::StatusOr<std::optional<std::string>> authorization_header() override {
      return std::optional<std::string>("Bearer t");
    }
    void on_unauthorized() override { ++calls; }
    int calls = 0;
  } creds;
  Credentials& base = creds;
  base.on_unauthorized("Bearer t");
  EXPECT_EQ(creds.calls, 1);
}

}  // namespace
}  // namespace dataflux
