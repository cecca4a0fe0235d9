#include "emulator/auth.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/absl_view.h"
#include "emulator/wire.h"

namespace dataflux::emulator::internal {

using dataflux::internal::av;
using dataflux::internal::sv;
namespace {

constexpr char kJwtBearer[] = "urn:ietf:params:oauth:grant-type:jwt-bearer";
constexpr std::int64_t kClockSkewS = 60;
constexpr std::int64_t kMaxAssertionLifetimeS = 3600;
constexpr std::size_t kTokenBytes = 32;
constexpr absl::Duration kMaxTokenLifetime = absl::Hours(24 * 365);
constexpr std::size_t kPruneAbove = 1024;  // live-token count above which expired ones go

absl::Status oauth_error(const std::string& code, const std::string& description) {
  return absl::InvalidArgumentError(absl::StrCat(code, " ", description));
}

// An OAuth2 error body (RFC 6749 §5.2), as accounts.google.com answers.
Reply oauth_reply(int http_status, const std::string& code, const std::string& description) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("error");
  w.String(code);
  w.Key("error_description");
  w.String(description);
  w.EndObject();
  Reply reply;
  reply.status = http_status;
  reply.content_type = "application/json; charset=utf-8";
  reply.body = buffer.GetString();
  return reply;
}

Reply oauth_reply(int http_status, const absl::Status& status) {
  const std::string message(status.message());
  const std::size_t space = message.find(' ');
  return oauth_reply(http_status, message.substr(0, space),
                     space == std::string::npos ? "" : message.substr(space + 1));
}

std::optional<std::string> base64url_decode(absl::string_view in) {
  std::string out;
  if (!absl::WebSafeBase64Unescape(in, &out)) {
    return std::nullopt;
  }
  return out;
}

std::optional<rapidjson::Document> parse_json_object(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) return std::nullopt;
  return doc;
}

std::string string_member(const rapidjson::Value& v, const char* key) {
  auto it = v.FindMember(key);
  if (it == v.MemberEnd() || !it->value.IsString()) return "";
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

// JWT NumericDate: an integer (or, leniently, a finite number) of seconds.
std::optional<std::int64_t> seconds_member(const rapidjson::Value& v, const char* key) {
  auto it = v.FindMember(key);
  if (it == v.MemberEnd()) return std::nullopt;
  if (it->value.IsInt64()) return it->value.GetInt64();
  if (it->value.IsNumber()) {
    const double d = it->value.GetDouble();
    if (std::isfinite(d) && std::abs(d) < 1e15) return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;

// A public key PEM, or (for convenience) the private key PEM of a service-account key file.
PkeyPtr read_key(const std::string& pem) {
  auto read = [&pem](bool is_public) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    if (bio == nullptr) return PkeyPtr();
    EVP_PKEY* key = is_public ? PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr)
                              : PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    return PkeyPtr(key);
  };
  PkeyPtr key = read(true);
  if (!key) key = read(false);
  return key;
}

bool verify_rs256(const std::string& pem, std::string_view signed_part,
                  const std::string& signature) {
  PkeyPtr key = read_key(pem);
  if (!key || EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_RSA) return false;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) return false;
  const bool ok =
      EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key.get()) == 1 &&
      EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()),
                       signature.size(), reinterpret_cast<const unsigned char*>(signed_part.data()),
                       signed_part.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

std::optional<std::string> random_token() {
  unsigned char bytes[kTokenBytes];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) return std::nullopt;
  std::string out;
  absl::WebSafeBase64Escape(absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)),
                            &out);
  return absl::StrCat("ya29.", out);  // Google's access tokens start so; some tools look
}

bool metadata_flavor(const httplib::Request& req) {
  return req.get_header_value("Metadata-Flavor") == "Google";
}

}  // namespace

std::optional<AuthRoute> resolve_auth_route(const httplib::Request& req,
                                            const std::vector<std::string>& segments,
                                            bool metadata_server) {
  if (req.method == "POST" && segments.size() == 1 && segments[0] == "token") {
    return AuthRoute{AuthRouteKind::kOAuthToken, "oauth.token"};
  }
  if (!metadata_server || segments.empty() || segments[0] != "computeMetadata") {
    return std::nullopt;
  }
  const bool get = req.method == "GET" || req.method == "HEAD";
  const std::size_t n = segments.size();
  if (get && n == 6 && segments[1] == "v1" && segments[2] == "instance" &&
      segments[3] == "service-accounts") {
    if (segments[5] == "token") return AuthRoute{AuthRouteKind::kMetadataToken, "metadata.token"};
    if (segments[5] == "email") return AuthRoute{AuthRouteKind::kMetadataEmail, "metadata.other"};
  }
  if (get && (n == 1 || (n == 2 && segments[1] == "v1"))) {
    return AuthRoute{AuthRouteKind::kMetadataRoot, "metadata.other"};
  }
  return AuthRoute{AuthRouteKind::kMetadataOther, "metadata.other"};
}

absl::StatusOr<JwtClaims> verify_jwt_assertion(std::string_view assertion,
                                               const std::map<std::string, std::string>& keys,
                                               const std::string& token_uri, std::int64_t now_s) {
  const std::vector<absl::string_view> parts = absl::StrSplit(av(assertion), '.');
  if (parts.size() != 3) return oauth_error("invalid_grant", "Invalid JWT: not three segments.");
  auto header_text = base64url_decode(parts[0]);
  auto claims_text = base64url_decode(parts[1]);
  auto signature = base64url_decode(parts[2]);
  if (!header_text || !claims_text || !signature) {
    return oauth_error("invalid_grant", "Invalid JWT: segments must be base64url.");
  }
  auto header = parse_json_object(*header_text);
  auto claims = parse_json_object(*claims_text);
  if (!header || !claims) {
    return oauth_error("invalid_grant", "Invalid JWT: header and claims must be JSON objects.");
  }
  if (string_member(*header, "alg") != "RS256") {
    return oauth_error("invalid_grant", "Invalid JWT: alg must be RS256.");
  }
  JwtClaims out;
  out.iss = string_member(*claims, "iss");
  auto key = keys.find(out.iss);
  if (out.iss.empty() || key == keys.end()) {
    return oauth_error("invalid_grant", "Invalid grant: account not found");
  }
  const std::size_t signed_length = parts[0].size() + 1 + parts[1].size();
  if (!verify_rs256(key->second, assertion.substr(0, signed_length), *signature)) {
    return oauth_error("invalid_grant", "Invalid JWT Signature.");
  }
  out.aud = string_member(*claims, "aud");
  if (out.aud != token_uri) {
    return oauth_error("invalid_grant", absl::StrCat("Invalid JWT: aud must be ", token_uri));
  }
  out.scope = string_member(*claims, "scope");
  if (out.scope.empty()) {
    return oauth_error("invalid_scope", "Invalid OAuth scope or ID token audience provided.");
  }
  auto iat = seconds_member(*claims, "iat");
  auto exp = seconds_member(*claims, "exp");
  if (!iat || !exp || *iat > now_s + kClockSkewS || *exp <= now_s || *exp < *iat ||
      *exp - *iat > kMaxAssertionLifetimeS) {
    return oauth_error("invalid_grant",
                       "Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                       "reasonable timeframe. Check your iat and exp values in the JWT claim.");
  }
  out.iat = *iat;
  out.exp = *exp;
  return out;
}

std::optional<std::map<std::string, std::string>> parse_token_form(const httplib::Request& req) {
  std::map<std::string, std::string> out;
  const std::string& body = req.body;
  const std::size_t first = body.find_first_not_of(" \t\r\n");
  if (absl::StrContains(req.get_header_value("Content-Type"), "json") ||
      (first != std::string::npos && body[first] == '{')) {
    auto doc = parse_json_object(body);
    if (!doc) return std::nullopt;
    for (const auto& m : doc->GetObject()) {
      if (!m.value.IsString()) return std::nullopt;
      out[std::string(m.name.GetString(), m.name.GetStringLength())] =
          std::string(m.value.GetString(), m.value.GetStringLength());
    }
    return out;
  }
  for (absl::string_view pair : absl::StrSplit(body, '&', absl::SkipEmpty())) {
    const std::size_t eq = pair.find('=');
    std::string key(pair.substr(0, eq));
    std::string value(eq == absl::string_view::npos ? "" : pair.substr(eq + 1));
    for (std::string* s : {&key, &value}) {
      for (char& c : *s) {
        if (c == '+') c = ' ';  // form encoding; a literal '+' arrives as %2B
      }
    }
    auto k = percent_decode(key);
    auto v = percent_decode(value);
    if (!k || !v) return std::nullopt;
    out[*k] = *v;
  }
  return out;
}

void Auth::set_config(AuthConfig config) {
  auto shared = std::make_shared<const AuthConfig>(std::move(config));
  std::lock_guard<std::mutex> lock(mu_);
  config_ = std::move(shared);
}

std::shared_ptr<const AuthConfig> Auth::config() const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_;
}

bool Auth::metadata_server() const { return config()->metadata_server; }

Reply Auth::execute(const AuthRoute& route, const httplib::Request& req,
                    const std::string& token_uri, const std::string& default_email) {
  if (route.kind == AuthRouteKind::kOAuthToken) return token_endpoint(req, token_uri);
  return metadata(route, req, default_email);
}

Reply Auth::token_endpoint(const httplib::Request& req, const std::string& token_uri) {
  auto form = parse_token_form(req);
  if (!form) return oauth_reply(400, "invalid_request", "Malformed token request body.");
  auto field = [&form](const char* key) {
    auto it = form->find(key);
    return it == form->end() ? std::string() : it->second;
  };
  const std::string grant_type = field("grant_type");
  const auto config = this->config();
  if (grant_type == kJwtBearer) {
    const std::string assertion = field("assertion");
    if (assertion.empty()) return oauth_reply(400, "invalid_request", "Missing assertion.");
    const std::int64_t now_s = absl::ToUnixSeconds(absl::Now());
    auto claims =
        verify_jwt_assertion(assertion, config->service_account_public_keys, token_uri, now_s);
    if (!claims.ok()) return oauth_reply(400, claims.status());
    return issue_token(config->token_lifetime);
  }
  if (grant_type == "refresh_token") {
    const std::string client_id = field("client_id");
    const std::string secret = field("client_secret");
    const std::string refresh_token = field("refresh_token");
    if (client_id.empty() || refresh_token.empty()) {
      return oauth_reply(400, "invalid_request",
                         "A refresh_token grant needs client_id and refresh_token.");
    }
    bool known_client = false;
    bool right_secret = false;
    for (const auto& c : config->refresh_clients) {
      if (c.client_id != client_id) continue;
      known_client = true;
      if (c.client_secret != secret) continue;
      right_secret = true;
      if (c.refresh_token == refresh_token) return issue_token(config->token_lifetime);
    }
    if (!known_client) return oauth_reply(401, "invalid_client", "The OAuth client was not found.");
    if (!right_secret) return oauth_reply(401, "invalid_client", "Unauthorized");
    return oauth_reply(400, "invalid_grant", "Bad Request");
  }
  if (grant_type.empty()) return oauth_reply(400, "invalid_request", "Missing grant_type.");
  return oauth_reply(400, "unsupported_grant_type", "Invalid grant_type.");
}

Reply Auth::metadata(const AuthRoute& route, const httplib::Request& req,
                     const std::string& default_email) {
  Reply reply;
  if (route.kind == AuthRouteKind::kMetadataRoot) {
    reply.content_type = "application/text";
    reply.body = "instance/\nproject/\n";
  } else if (!metadata_flavor(req)) {
    reply.status = 403;
    reply.content_type = "text/html; charset=UTF-8";
    reply.body = "Missing Metadata-Flavor:Google header.\n";
  } else if (route.kind == AuthRouteKind::kMetadataToken) {
    reply = issue_token(config()->token_lifetime);
  } else if (route.kind == AuthRouteKind::kMetadataEmail) {
    reply.content_type = "application/text";
    reply.body = default_email;
  } else {
    reply.status = 404;
    reply.content_type = "text/html; charset=UTF-8";
    reply.body = "Not Found\n";
  }
  reply.headers.emplace_back("Metadata-Flavor", "Google");
  return reply;
}

Reply Auth::issue_token(absl::Duration lifetime) {
  auto token = random_token();
  if (!token) return oauth_reply(500, "internal_failure", "No random bytes for a token.");
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tokens_.size() > kPruneAbove) {
      for (auto it = tokens_.begin(); it != tokens_.end();) {
        it = it->second <= now ? tokens_.erase(it) : std::next(it);
      }
    }
    tokens_[*token] = now + absl::ToChronoNanoseconds(std::min(lifetime, kMaxTokenLifetime));
  }
  Reply reply;
  reply.content_type = "application/json; charset=utf-8";
  reply.body = absl::StrCat("{\"access_token\":\"", *token,
                            "\",\"expires_in\":", absl::ToInt64Seconds(lifetime),
                            ",\"token_type\":\"Bearer\"}");
  return reply;
}

bool Auth::authorized(const httplib::Request& req) {
  if (!config()->require_auth) return true;
  const std::string header = req.get_header_value("Authorization");
  constexpr std::size_t kScheme = 7;  // "Bearer "
  if (header.size() <= kScheme ||
      !absl::EqualsIgnoreCase(absl::string_view(header).substr(0, kScheme), "Bearer ")) {
    return false;
  }
  const std::string token(absl::StripAsciiWhitespace(absl::string_view(header).substr(kScheme)));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tokens_.find(token);
  return it != tokens_.end() && std::chrono::steady_clock::now() < it->second;
}

Reply Auth::unauthorized_reply() {
  Reply reply;
  reply.status = 401;
  reply.body =
      R"({"error":{"code":401,"message":"Invalid Credentials","errors":[{"domain":"global",)"
      R"("reason":"authError","message":"Invalid Credentials","locationType":"header",)"
      R"("location":"Authorization"}]}})";
  reply.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\"");
  return reply;
}

void Auth::expire_tokens() {
  std::lock_guard<std::mutex> lock(mu_);
  tokens_.clear();
}

}  // namespace dataflux::emulator::internal
