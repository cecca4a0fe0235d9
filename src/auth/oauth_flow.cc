#include "auth/oauth_flow.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include <cstdio>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/absl_view.h"
#include "core/http_status.h"
#include "core/percent.h"
#include "core/retry_policy.h"
#include "http/http_transport.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace dataflux::internal {
namespace {

std::string json_object(const std::vector<std::pair<const char*, std::string>>& strings,
                        const std::vector<std::pair<const char*, std::int64_t>>& numbers) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  for (const auto& [name, value] : strings) {
    writer.Key(name);
    writer.String(value);
  }
  for (const auto& [name, value] : numbers) {
    writer.Key(name);
    writer.Int64(value);
  }
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

// What a token endpoint said, e.g. "invalid_grant: Invalid JWT Signature.", shortened and with
// every secret removed, for error messages.
std::string describe_error_body(std::string_view body, const std::vector<std::string>& secrets) {
  std::string out;
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (!doc.HasParseError() && doc.IsObject()) {
    auto string_field = [&](const char* name) -> std::string {
      auto it = doc.FindMember(name);
      if (it != doc.MemberEnd() && it->value.IsString()) return it->value.GetString();
      return "";
    };
    out = string_field("error");
    // GCS-shaped {"error":{"message":...}} from a metadata server or emulator.
    auto err = doc.FindMember("error");
    if (out.empty() && err != doc.MemberEnd() && err->value.IsObject()) {
      auto m = err->value.FindMember("message");
      if (m != err->value.MemberEnd() && m->value.IsString()) out = m->value.GetString();
    }
    std::string description = string_field("error_description");
    if (!description.empty())
      out = out.empty() ? description : absl::StrCat(out, ": ", description);
  }
  if (out.empty()) out = std::string(body);
  constexpr std::size_t kMax = 300;
  if (out.size() > kMax) out = out.substr(0, kMax) + "...";
  for (const auto& secret : secrets) {
    if (!secret.empty()) out = absl::StrReplaceAll(out, {{av(secret), "<redacted>"}});
  }
  return out;
}

// One attempt's HTTP outcome as a status: transport errors and HTTP errors keep their codes
// (so is_transient() decides retries); 400/401/403 from a token endpoint are PermissionDenied.
absl::StatusOr<AccessToken> to_token(const HttpResponse& response, const std::string& what,
                                     const std::string& where,
                                     const std::vector<std::string>& secrets) {
  if (!response.status.ok()) {
    return absl::Status(
        response.status.code(),
        absl::StrCat(what, ": cannot reach ", where, ": ",
                     describe_error_body(std::string(response.status.message()), secrets)));
  }
  long code = response.http_status;
  if (code >= 200 && code < 300) return parse_token_response(response.body, what);
  std::string said = describe_error_body(response.body, secrets);
  if (code == 400 || code == 401 || code == 403) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, ": ", where, " refused the credential (HTTP ", code, "): ", said));
  }
  return status_from_http(code, absl::StrCat(what, ": ", where), said);
}

absl::StatusOr<AccessToken> send_with_retry(const std::function<HttpRequest()>& make,
                                            const RetryOptions& options, bool retry_transport,
                                            const std::string& what, const std::string& where,
                                            const std::vector<std::string>& secrets) {
  RetryState retry(options, Idempotency::kIdempotent);
  std::shared_ptr<HttpTransport> transport = HttpTransport::instance();
  for (;;) {
    HttpRequest request = make();
    request.connect_timeout = retry.remaining();
    HttpResponse response = transport->send(std::move(request));
    absl::StatusOr<AccessToken> token = to_token(response, what, where, secrets);
    if (token.ok()) return token;
    if (!response.status.ok() && !retry_transport) return token.status();
    auto delay = retry.on_failure(token.status());
    if (!delay) return retry.final_error(token.status());
    retry.clock().sleep_for(*delay);
  }
}

}  // namespace

std::string base64url_encode(std::string_view data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(data[k]); };
  for (; i + 3 <= data.size(); i += 3) {
    unsigned v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (data.size() - i == 1) {
    unsigned v = byte(i) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
  } else if (data.size() - i == 2) {
    unsigned v = (byte(i) << 16) | (byte(i + 1) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

std::string short_digest(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr);
  std::string out;
  for (unsigned i = 0; i < 8 && i < size; ++i) {
    char buf[3];
    std::snprintf(buf, sizeof(buf), "%02x", digest[i]);
    out += buf;
  }
  return out;
}

void PkeyDeleter::operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }

absl::StatusOr<PrivateKey> load_private_key(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  if (!bio) return absl::ResourceExhaustedError("cannot allocate an OpenSSL BIO");
  // A null passphrase callback with no user data: an encrypted key fails instead of prompting.
  PrivateKey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, const_cast<char*>("")));
  if (!key) return absl::InvalidArgumentError("is not a PEM private key");
  if (EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) {
    return absl::InvalidArgumentError("is not an RSA private key (RS256 needs one)");
  }
  return key;
}

absl::StatusOr<std::string> make_jwt_assertion(EVP_PKEY* key, const JwtClaims& claims) {
  std::int64_t iat = absl::ToUnixSeconds(claims.issued_at);
  std::string header = json_object({{"alg", "RS256"}, {"typ", "JWT"}, {"kid", claims.key_id}}, {});
  std::string payload =
      json_object({{"iss", claims.issuer}, {"scope", claims.scope}, {"aud", claims.audience}},
                  {{"iat", iat}, {"exp", iat + absl::ToInt64Seconds(claims.lifetime)}});
  std::string signing_input =
      absl::StrCat(base64url_encode(header), ".", base64url_encode(payload));

  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  std::size_t size = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &size,
                     reinterpret_cast<const unsigned char*>(signing_input.data()),
                     signing_input.size()) != 1) {
    return absl::InternalError("cannot sign the JWT assertion with the private key");
  }
  std::string signature(size, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &size,
                     reinterpret_cast<const unsigned char*>(signing_input.data()),
                     signing_input.size()) != 1) {
    return absl::InternalError("cannot sign the JWT assertion with the private key");
  }
  signature.resize(size);
  return absl::StrCat(signing_input, ".", base64url_encode(signature));
}

absl::StatusOr<AccessToken> parse_token_response(std::string_view body, std::string_view what) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return absl::UnavailableError(
        absl::StrCat(av(what), ": the token endpoint answered with something that is not JSON"));
  }
  auto token = doc.FindMember("access_token");
  if (token == doc.MemberEnd() || !token->value.IsString() || token->value.GetStringLength() == 0) {
    return absl::UnavailableError(
        absl::StrCat(av(what), ": the token endpoint's answer has no \"access_token\""));
  }
  std::int64_t expires_in = 3600;
  auto expires = doc.FindMember("expires_in");
  if (expires != doc.MemberEnd() && expires->value.IsInt64()) {
    expires_in = expires->value.GetInt64();
  } else if (expires != doc.MemberEnd() && expires->value.IsString()) {
    expires_in = std::atoll(expires->value.GetString());
  }
  AccessToken out;
  out.token.assign(token->value.GetString(), token->value.GetStringLength());
  out.expiry = absl::Now() + absl::Seconds(expires_in);
  return out;
}

absl::StatusOr<AccessToken> request_token(const std::string& token_uri, std::string form,
                                          const RetryOptions& retry, const std::string& what,
                                          const std::vector<std::string>& secrets) {
  auto make = [&] {
    HttpRequest request;
    request.method = "POST";
    request.url = token_uri;
    request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    request.body_view = std::string_view(form);
    return request;
  };
  return send_with_retry(make, retry, /*retry_transport=*/true, what,
                         absl::StrCat("token endpoint ", token_uri), secrets);
}

absl::StatusOr<AccessToken> request_metadata_token(const std::string& host, absl::Duration timeout,
                                                   const RetryOptions& retry,
                                                   bool retry_transport) {
  std::string url =
      absl::StrCat("http://", host, "/computeMetadata/v1/instance/service-accounts/default/token");
  auto make = [&] {
    HttpRequest request;
    request.url = url;
    request.headers.emplace_back("Metadata-Flavor", "Google");
    request.timeout = timeout;
    request.stall_timeout = timeout;
    return request;
  };
  return send_with_retry(make, retry, retry_transport, absl::StrCat("compute engine credentials"),
                         absl::StrCat("metadata server ", host), {});
}

}  // namespace dataflux::internal
