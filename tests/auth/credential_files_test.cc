// Credential files and JSON: what a malformed one says (file and field, never a secret), and the
// JWT assertion a service account sends.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "auth/oauth_flow.h"
#include "auth_test_env.h"
#include "core/percent.h"
#include "dataflux/credentials.h"
#include "rapidjson/document.h"

namespace dataflux::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string message_of(const absl::StatusOr<std::shared_ptr<Credentials>>& c) {
  return std::string(c.status().message());
}

TEST(CredentialFiles, MissingFileNamesIt) {
  TempDir dir;
  auto c = make_credentials_from_file(dir.path() + "/nope.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(message_of(c), HasSubstr("credentials file " + dir.path() + "/nope.json"));
  EXPECT_THAT(message_of(c), HasSubstr("cannot read"));
}

TEST(CredentialFiles, InvalidJsonNamesTheFile) {
  TempDir dir;
  std::string path = dir.write("broken.json", R"({"type": "service_account",)");
  auto c = make_credentials_from_file(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message_of(c), HasSubstr("credentials file " + path + ": invalid JSON"));
}

TEST(CredentialFiles, MissingFieldsAreNamed) {
  TempDir dir;
  const auto& key = test_key();
  struct Case {
    std::string json;
    std::string field;
  } cases[] = {
      {json_of({{"client_email", "a@b"}}), "type"},
      {json_of({{"type", "service_account"}, {"client_email", "a@b"}}), "private_key"},
      {json_of({{"type", "service_account"}, {"private_key", key.private_pem}}), "client_email"},
      {json_of({{"type", "authorized_user"}, {"client_secret", "s"}, {"refresh_token", "r"}}),
       "client_id"},
      {json_of({{"type", "authorized_user"}, {"client_id", "i"}, {"refresh_token", "r"}}),
       "client_secret"},
      {json_of({{"type", "authorized_user"}, {"client_id", "i"}, {"client_secret", "s"}}),
       "refresh_token"},
  };
  for (const auto& c : cases) {
    std::string path = dir.write("c.json", c.json);
    auto creds = make_credentials_from_file(path);
    ASSERT_FALSE(creds.ok()) << c.field;
    EXPECT_EQ(creds.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(message_of(creds),
                HasSubstr("credentials file " + path + ": field \"" + c.field + "\" is missing"));
    EXPECT_THAT(message_of(creds), Not(HasSubstr("PRIVATE KEY")));
  }
}

TEST(CredentialFiles, UnknownTypeAndWrongFieldTypes) {
  auto c = make_credentials_from_json(json_of({{"type", "external_account"}}));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(message_of(c), HasSubstr("credentials JSON: field \"type\" is \"external_account\""));
  EXPECT_THAT(message_of(c), HasSubstr("service_account"));
  c = make_credentials_from_json(R"({"type": 7})");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(message_of(c), HasSubstr("field \"type\" is not a string"));
  c = make_credentials_from_json("[1, 2]");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(message_of(c), HasSubstr("not an object"));
}

TEST(CredentialFiles, BadPrivateKeyIsNamedWithoutQuotingIt) {
  std::string garbage = "-----BEGIN PRIVATE KEY-----\nAAAAsecretish\n-----END PRIVATE KEY-----\n";
  auto c = make_credentials_from_json(service_account_json("a@b", "http://x/token", garbage));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(message_of(c), HasSubstr("field \"private_key\" is not a PEM private key"));
  EXPECT_THAT(message_of(c), Not(HasSubstr("secretish")));
}

TEST(CredentialFiles, ValidFilesLoadWithoutNetwork) {
  EXPECT_TRUE(make_credentials_from_json(
                  service_account_json("a@b", "http://127.0.0.1:1/token", test_key().private_pem))
                  .ok());
  EXPECT_TRUE(
      make_credentials_from_json(authorized_user_json("id", "rt", "http://127.0.0.1:1/token"))
          .ok());
  // token_uri is optional.
  EXPECT_TRUE(make_credentials_from_json(json_of({{"type", "authorized_user"},
                                                  {"client_id", "i"},
                                                  {"client_secret", "s"},
                                                  {"refresh_token", "r"}}))
                  .ok());
}

TEST(CredentialFiles, BothFileAndJsonIsAnError) {
  EnvGuard env;
  AuthOptions auth;
  auth.credentials_file = "/x.json";
  auth.credentials_json = "{}";
  auto header = make_google_default_credentials(auth)->authorization_header();
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OAuthFlow, Base64UrlAndFormEncoding) {
  EXPECT_EQ(internal::base64url_encode(""), "");
  EXPECT_EQ(internal::base64url_encode("f"), "Zg");
  EXPECT_EQ(internal::base64url_encode("fo"), "Zm8");
  EXPECT_EQ(internal::base64url_encode("foo"), "Zm9v");
  EXPECT_EQ(internal::base64url_encode("\xfb\xff"), "-_8");
  EXPECT_EQ(internal::percent_encode("a b+c/=&~"), "a%20b%2Bc%2F%3D%26~");
}

std::string base64url_decode(std::string s) {
  for (char& c : s) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (s.size() % 4 != 0) s += '=';
  std::string out(s.size(), '\0');
  int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  out.resize(n > 0 ? n : 0);
  std::size_t pad = 0;
  for (std::size_t i = s.size(); i > 0 && s[i - 1] == '='; --i) ++pad;
  out.resize(out.size() - pad);
  return out;
}

TEST(OAuthFlow, JwtAssertionIsRs256AndVerifies) {
  auto key = internal::load_private_key(test_key().private_pem).value();
  internal::JwtClaims claims;
  claims.key_id = "kid-7";
  claims.issuer = "sa@p.iam.gserviceaccount.com";
  claims.scope = "s1 s2";
  claims.audience = "https://oauth2.googleapis.com/token";
  claims.issued_at = absl::FromUnixSeconds(1'700'000'000);
  std::string jwt = internal::make_jwt_assertion(key.get(), claims).value();
  auto dot1 = jwt.find('.');
  auto dot2 = jwt.find('.', dot1 + 1);
  ASSERT_NE(dot2, std::string::npos);
  EXPECT_EQ(jwt.find('='), std::string::npos);

  rapidjson::Document header, payload;
  header.Parse(base64url_decode(jwt.substr(0, dot1)).c_str());
  payload.Parse(base64url_decode(jwt.substr(dot1 + 1, dot2 - dot1 - 1)).c_str());
  ASSERT_TRUE(header.IsObject() && payload.IsObject());
  EXPECT_STREQ(header["alg"].GetString(), "RS256");
  EXPECT_STREQ(header["typ"].GetString(), "JWT");
  EXPECT_STREQ(header["kid"].GetString(), "kid-7");
  EXPECT_STREQ(payload["iss"].GetString(), "sa@p.iam.gserviceaccount.com");
  EXPECT_STREQ(payload["scope"].GetString(), "s1 s2");
  EXPECT_STREQ(payload["aud"].GetString(), "https://oauth2.googleapis.com/token");
  EXPECT_EQ(payload["iat"].GetInt64(), 1'700'000'000);
  EXPECT_EQ(payload["exp"].GetInt64(), 1'700'003'600);

  // The signature verifies with the public key over "header.payload".
  BIO* bio = BIO_new_mem_buf(test_key().public_pem.data(), -1);
  EVP_PKEY* pub = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ASSERT_NE(pub, nullptr);
  std::string signature = base64url_decode(jwt.substr(dot2 + 1));
  std::string input = jwt.substr(0, dot2);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ASSERT_EQ(EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, pub), 1);
  EXPECT_EQ(EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()),
                             signature.size(), reinterpret_cast<const unsigned char*>(input.data()),
                             input.size()),
            1);
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(pub);
}

TEST(OAuthFlow, TokenResponses) {
  auto t = internal::parse_token_response(
      R"({"access_token":"ya29.x","expires_in":120,"token_type":"Bearer"})", "sa");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->token, "ya29.x");
  EXPECT_GT(t->expiry, absl::Now() + absl::Seconds(110));
  EXPECT_LT(t->expiry, absl::Now() + absl::Seconds(130));
  EXPECT_FALSE(internal::parse_token_response(R"({"expires_in":120})", "sa").ok());
  EXPECT_FALSE(internal::parse_token_response("<html>", "sa").ok());
}

}  // namespace
}  // namespace dataflux::testing
