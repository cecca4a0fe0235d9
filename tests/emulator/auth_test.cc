// The emulator's authentication mode, driven over HTTP with JWTs this test signs itself
// (OpenSSL EVP, independent of any client code in src/auth).
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <chrono>
#include <ctime>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "emulator_fixture.h"

namespace dataflux::emulator::testing {
namespace {

constexpr char kEmail[] = "loader@test-project.iam.gserviceaccount.com";
constexpr char kScope[] = "https://www.googleapis.com/auth/devstorage.read_write";
constexpr char kJwtBearer[] = "urn:ietf:params:oauth:grant-type:jwt-bearer";

std::string b64url(const std::string& in) {
  std::string out;
  absl::WebSafeBase64Escape(in, &out);
  return out;
}

struct KeyPair {
  EVP_PKEY* key = nullptr;
  std::string public_pem;
};

KeyPair make_key() {
  KeyPair out;
  out.key = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048));
  if (out.key == nullptr) return out;
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(bio, out.key);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  out.public_pem.assign(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

std::string sign_rs256(EVP_PKEY* key, const std::string& data) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::size_t length = 0;
  std::string signature;
  if (EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
      EVP_DigestSign(ctx, nullptr, &length, reinterpret_cast<const unsigned char*>(data.data()),
                     data.size()) == 1) {
    signature.resize(length);
    if (EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(signature.data()), &length,
                       reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1) {
      signature.clear();
    }
    signature.resize(length);
  }
  EVP_MD_CTX_free(ctx);
  return signature;
}

struct Claims {
  std::string alg = "RS256";
  std::string iss = kEmail;
  std::string aud;  // the emulator's token_uri() when empty
  std::string scope = kScope;
  std::int64_t iat_offset_s = 0;
  std::int64_t exp_offset_s = 3600;
};

std::string make_jwt(EVP_PKEY* key, const Claims& c, const std::string& token_uri) {
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  const std::string header = absl::StrCat(R"({"alg":")", c.alg, R"(","typ":"JWT"})");
  const std::string claims =
      absl::StrCat(R"({"iss":")", c.iss, R"(","scope":")", c.scope, R"(","aud":")",
                   c.aud.empty() ? token_uri : c.aud, R"(","iat":)", now + c.iat_offset_s,
                   R"(,"exp":)", now + c.exp_offset_s, "}");
  const std::string signed_part = absl::StrCat(b64url(header), ".", b64url(claims));
  return absl::StrCat(signed_part, ".", b64url(sign_rs256(key, signed_part)));
}

std::string error_code(const std::string& body) { return json_string(body, "error"); }

class AuthTest : public EmulatorTest {
 protected:
  static void SetUpTestSuite() {
    key_ = make_key();
    other_key_ = make_key();
  }
  static void TearDownTestSuite() {
    EVP_PKEY_free(key_.key);
    EVP_PKEY_free(other_key_.key);
  }

  void SetUp() override {
    ASSERT_NE(key_.key, nullptr);
    ASSERT_NE(other_key_.key, nullptr);
    EmulatorOptions options;
    options.auth = config();
    start(std::move(options));
  }

  AuthConfig config() const {
    AuthConfig auth;
    auth.require_auth = true;
    auth.service_account_public_keys[kEmail] = key_.public_pem;
    auth.refresh_clients.push_back({"client-1", "secret-1", "refresh-1"});
    auth.metadata_server = true;
    return auth;
  }

  httplib::Result post_token(const std::string& form) {
    return client_->Post("/token", form, "application/x-www-form-urlencoded");
  }
  httplib::Result jwt_grant(const std::string& jwt) {
    return post_token(absl::StrCat("grant_type=", kJwtBearer, "&assertion=", jwt));
  }
  // A token from a valid JWT grant ("" on failure).
  std::string token() {
    auto res = jwt_grant(make_jwt(key_.key, {}, emu_->token_uri()));
    EXPECT_TRUE(res);
    if (!res) return "";
    EXPECT_EQ(res->status, 200) << res->body;
    return json_string(res->body, "access_token");
  }

  // GET of the bucket's object list, with `authorization` as that header ("" = none).
  httplib::Result list(const std::string& authorization) {
    httplib::Headers headers;
    if (!authorization.empty()) headers.emplace("Authorization", authorization);
    return client_->Get(("/storage/v1/b/" + std::string(kBucket) + "/o").c_str(), headers);
  }

  static void expect_invalid_credentials(const httplib::Result& res) {
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401);
    EXPECT_EQ(res->get_header_value("WWW-Authenticate").rfind("Bearer", 0), 0u);
    auto doc = parse_json(res->body);
    ASSERT_TRUE(doc.IsObject()) << res->body;
    EXPECT_EQ(doc["error"]["code"].GetInt(), 401);
    EXPECT_STREQ(doc["error"]["message"].GetString(), "Invalid Credentials");
    const auto& e = doc["error"]["errors"][0];
    EXPECT_STREQ(e["domain"].GetString(), "global");
    EXPECT_STREQ(e["reason"].GetString(), "authError");
    EXPECT_STREQ(e["locationType"].GetString(), "header");
    EXPECT_STREQ(e["location"].GetString(), "Authorization");
  }

  void expect_oauth_error(const httplib::Result& res, int status, const std::string& code) {
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, status) << res->body;
    EXPECT_EQ(error_code(res->body), code) << res->body;
  }

  static KeyPair key_;
  static KeyPair other_key_;
};

KeyPair AuthTest::key_;
KeyPair AuthTest::other_key_;

TEST_F(AuthTest, JwtGrantIssuesATokenThatOpensStorageRoutes) {
  EXPECT_EQ(emu_->token_uri(), emu_->endpoint() + "/token");
  auto res = jwt_grant(make_jwt(key_.key, {}, emu_->token_uri()));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto doc = parse_json(res->body);
  ASSERT_TRUE(doc.IsObject());
  EXPECT_STREQ(doc["token_type"].GetString(), "Bearer");
  EXPECT_EQ(doc["expires_in"].GetInt64(), 3600);
  const std::string token = doc["access_token"].GetString();
  EXPECT_GE(token.size(), 40u);

  auto listed = list("Bearer " + token);
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->status, 200) << listed->body;
  // Each grant gets a fresh token.
  EXPECT_NE(this->token(), token);
}

TEST_F(AuthTest, JsonBodyIsAcceptedToo) {
  const std::string body = absl::StrCat(R"({"grant_type":")", kJwtBearer, R"(","assertion":")",
                                        make_jwt(key_.key, {}, emu_->token_uri()), R"("})");
  auto res = client_->Post("/token", body, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_FALSE(json_string(res->body, "access_token").empty());
}

TEST_F(AuthTest, MissingOrInvalidBearerIsInvalidCredentials) {
  expect_invalid_credentials(list(""));
  expect_invalid_credentials(list("Bearer not-a-token-we-issued"));
  expect_invalid_credentials(list("Basic dXNlcjpwYXNz"));
  expect_invalid_credentials(list("Bearer "));
  // Uploads and media are storage routes as well.
  expect_invalid_credentials(client_->Post(
      ("/upload/storage/v1/b/" + std::string(kBucket) + "/o?uploadType=media&name=x").c_str(),
      "data", "application/octet-stream"));
  // The control API stays open.
  auto counters = client_->Get("/_dataflux/counters");
  ASSERT_TRUE(counters);
  EXPECT_EQ(counters->status, 200);
}

TEST_F(AuthTest, BadAssertionsAreInvalidGrant) {
  const std::string uri = emu_->token_uri();
  {
    auto res = jwt_grant(make_jwt(other_key_.key, {}, uri));
    expect_oauth_error(res, 400, "invalid_grant");
    EXPECT_EQ(json_string(res->body, "error_description"), "Invalid JWT Signature.");
  }
  Claims unknown_issuer;
  unknown_issuer.iss = "stranger@test-project.iam.gserviceaccount.com";
  expect_oauth_error(jwt_grant(make_jwt(key_.key, unknown_issuer, uri)), 400, "invalid_grant");
  Claims wrong_aud;
  wrong_aud.aud = "https://oauth2.googleapis.com/token";
  expect_oauth_error(jwt_grant(make_jwt(key_.key, wrong_aud, uri)), 400, "invalid_grant");
  Claims expired;
  expired.iat_offset_s = -7200;
  expired.exp_offset_s = -3600;
  expect_oauth_error(jwt_grant(make_jwt(key_.key, expired, uri)), 400, "invalid_grant");
  Claims too_long;
  too_long.exp_offset_s = 7200;
  expect_oauth_error(jwt_grant(make_jwt(key_.key, too_long, uri)), 400, "invalid_grant");
  Claims future;
  future.iat_offset_s = 600;
  future.exp_offset_s = 1200;
  expect_oauth_error(jwt_grant(make_jwt(key_.key, future, uri)), 400, "invalid_grant");
  Claims hs256;
  hs256.alg = "HS256";
  expect_oauth_error(jwt_grant(make_jwt(key_.key, hs256, uri)), 400, "invalid_grant");
  Claims no_scope;
  no_scope.scope = "";
  auto res = jwt_grant(make_jwt(key_.key, no_scope, uri));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  // A tampered claims segment no longer matches the signature.
  std::string jwt = make_jwt(key_.key, {}, uri);
  jwt[jwt.find('.') + 3] ^= 1;
  expect_oauth_error(jwt_grant(jwt), 400, "invalid_grant");
  expect_oauth_error(jwt_grant("not.a-jwt"), 400, "invalid_grant");
  expect_oauth_error(post_token(absl::StrCat("grant_type=", kJwtBearer)), 400, "invalid_request");
  expect_oauth_error(client_->Post("/token", "{not json", "application/json"), 400,
                     "invalid_request");
  expect_oauth_error(post_token("grant_type=password"), 400, "unsupported_grant_type");
}

TEST_F(AuthTest, RefreshGrant) {
  auto res = post_token(
      "grant_type=refresh_token&client_id=client-1&client_secret=secret-1&refresh_token=refresh-1");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json_string(res->body, "token_type"), "Bearer");
  auto listed = list("Bearer " + json_string(res->body, "access_token"));
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->status, 200);

  expect_oauth_error(
      post_token("grant_type=refresh_token&client_id=client-1&client_secret=wrong&refresh_token="
                 "refresh-1"),
      401, "invalid_client");
  expect_oauth_error(
      post_token("grant_type=refresh_token&client_id=nobody&client_secret=secret-1&refresh_token="
                 "refresh-1"),
      401, "invalid_client");
  expect_oauth_error(
      post_token("grant_type=refresh_token&client_id=client-1&client_secret=secret-1&refresh_token="
                 "revoked"),
      400, "invalid_grant");
}

TEST_F(AuthTest, MetadataServer) {
  const std::string base = "/computeMetadata/v1/instance/service-accounts/default/";
  auto no_flavor = client_->Get((base + "token").c_str());
  ASSERT_TRUE(no_flavor);
  EXPECT_EQ(no_flavor->status, 403);
  EXPECT_EQ(emu_->request_count("metadata.token"), 1u);

  const httplib::Headers flavor{{"Metadata-Flavor", "Google"}};
  auto res = client_->Get((base + "token").c_str(), flavor);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Metadata-Flavor"), "Google");
  EXPECT_EQ(json_string(res->body, "token_type"), "Bearer");
  EXPECT_EQ(parse_json(res->body)["expires_in"].GetInt64(), 3600);
  auto listed = list("Bearer " + json_string(res->body, "access_token"));
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->status, 200);
  EXPECT_EQ(emu_->request_count("metadata.token"), 2u);

  auto email = client_->Get((base + "email").c_str(), flavor);
  ASSERT_TRUE(email);
  EXPECT_EQ(email->status, 200);
  EXPECT_NE(email->body.find('@'), std::string::npos);
  auto email_no_flavor = client_->Get((base + "email").c_str());
  ASSERT_TRUE(email_no_flavor);
  EXPECT_EQ(email_no_flavor->status, 403);

  auto root = client_->Get("/computeMetadata/v1/", flavor);
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 200);
  EXPECT_EQ(root->get_header_value("Metadata-Flavor"), "Google");

  // Off: no metadata server at all.
  AuthConfig off = config();
  off.metadata_server = false;
  emu_->set_auth(off);
  auto gone = client_->Get((base + "token").c_str(), flavor);
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
}

TEST_F(AuthTest, ExpireTokensRevokesEveryIssuedToken) {
  const std::string token = this->token();
  auto before = list("Bearer " + token);
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 200);
  emu_->expire_tokens();
  expect_invalid_credentials(list("Bearer " + token));
  // A new grant works again.
  auto after = list("Bearer " + this->token());
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST_F(AuthTest, ShortTokenLifetimeIsHonoured) {
  AuthConfig short_lived = config();
  short_lived.token_lifetime = absl::Seconds(1);
  emu_->set_auth(short_lived);
  auto res = jwt_grant(make_jwt(key_.key, {}, emu_->token_uri()));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(parse_json(res->body)["expires_in"].GetInt64(), 1);
  const std::string token = json_string(res->body, "access_token");
  auto fresh = list("Bearer " + token);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  expect_invalid_credentials(list("Bearer " + token));
}

TEST_F(AuthTest, CountersAndFaults) {
  emu_->reset_counters();
  jwt_grant(make_jwt(key_.key, {}, emu_->token_uri()));
  jwt_grant(make_jwt(other_key_.key, {}, emu_->token_uri()));  // failures count too
  EXPECT_EQ(emu_->request_count("oauth.token"), 2u);

  emu_->inject_fault("oauth.token", Fault::status(503));
  auto faulted = jwt_grant(make_jwt(key_.key, {}, emu_->token_uri()));
  ASSERT_TRUE(faulted);
  EXPECT_EQ(faulted->status, 503);
  EXPECT_EQ(emu_->pending_faults("oauth.token"), 0u);
  EXPECT_FALSE(token().empty());
  EXPECT_EQ(emu_->request_count("oauth.token"), 4u);

  // An unauthenticated storage request is counted, refused before faults (the fault stays
  // queued for an authorized request) and before the rate limit.
  emu_->inject_fault("objects.list", Fault::status(503));
  expect_invalid_credentials(list(""));
  EXPECT_EQ(emu_->request_count("objects.list"), 1u);
  EXPECT_EQ(emu_->pending_faults("objects.list"), 1u);
  auto authorized = list("Bearer " + token());
  ASSERT_TRUE(authorized);
  EXPECT_EQ(authorized->status, 503);
}

TEST_F(AuthTest, SetAuthAtRuntime) {
  emu_->set_auth(AuthConfig{});  // auth off: storage routes open
  auto open = list("");
  ASSERT_TRUE(open);
  EXPECT_EQ(open->status, 200);
  // With no keys registered, no JWT is accepted.
  expect_oauth_error(jwt_grant(make_jwt(key_.key, {}, emu_->token_uri())), 400, "invalid_grant");
  emu_->set_auth(config());
  expect_invalid_credentials(list(""));
  auto authorized = list("Bearer " + token());
  ASSERT_TRUE(authorized);
  EXPECT_EQ(authorized->status, 200);
}

}  // namespace
}  // namespace dataflux::emulator::testing
