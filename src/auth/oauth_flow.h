// The wire side of OAuth2 for Google credentials: RS256 JWT assertions, token endpoint POSTs and
// metadata server GETs, with retries, and errors that never carry a secret.
//
//   auto key = internal::load_private_key(pem).value();
//   std::string jwt = internal::make_jwt_assertion(*key, claims).value();
//   auto token = internal::request_token(uri, form, retry, "service account a@b (file /x.json)",
//                                        {jwt});
#ifndef DATAFLUX_SRC_AUTH_OAUTH_FLOW_H_
#define DATAFLUX_SRC_AUTH_OAUTH_FLOW_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "auth/token_cache.h"
#include "dataflux/retry.h"

typedef struct evp_pkey_st EVP_PKEY;

namespace dataflux::internal {

std::string base64url_encode(std::string_view data);  // no padding
// SHA-256 of `data`, hex, first 16 characters: names a secret in a cache key without holding it.
std::string short_digest(std::string_view data);

struct PkeyDeleter {
  void operator()(EVP_PKEY* key) const;
};
using PrivateKey = std::unique_ptr<EVP_PKEY, PkeyDeleter>;
// A PEM private key (PKCS#8 or traditional RSA).
absl::StatusOr<PrivateKey> load_private_key(const std::string& pem);

struct JwtClaims {
  std::string key_id;    // "kid"
  std::string issuer;    // "iss" (client_email)
  std::string scope;     // space-joined scopes
  std::string audience;  // "aud" (token_uri)
  absl::Time issued_at;
  absl::Duration lifetime = absl::Hours(1);
};
// header.claims.signature, each base64url without padding, signed RS256 (SHA-256).
absl::StatusOr<std::string> make_jwt_assertion(EVP_PKEY* key, const JwtClaims& claims);

// Parses {"access_token","expires_in","token_type"} into a token expiring at now + expires_in.
absl::StatusOr<AccessToken> parse_token_response(std::string_view body, std::string_view what);

// POSTs `form` to `token_uri` on the process-wide transport, retrying 408/429/5xx and resets under
// `retry`. 400/401/403 become PermissionDenied naming `what` (the credential) and what the
// endpoint said; `secrets` are redacted from anything quoted from the server.
absl::StatusOr<AccessToken> request_token(const std::string& token_uri, std::string form,
                                          const RetryOptions& retry, const std::string& what,
                                          const std::vector<std::string>& secrets);

// GETs a token from the metadata server at `host` (host[:port]) with "Metadata-Flavor: Google",
// each attempt limited to `timeout`. Transport failures (no answer at all) are retried only when
// `retry_transport`, so a machine without a metadata server fails within `timeout`.
absl::StatusOr<AccessToken> request_metadata_token(const std::string& host, absl::Duration timeout,
                                                   const RetryOptions& retry, bool retry_transport);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_AUTH_OAUTH_FLOW_H_
