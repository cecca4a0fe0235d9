// The emulator's authentication mode: an OAuth2 token endpoint (JWT-bearer and refresh-token
// grants), a fake GCE metadata server, and the bearer-token check in front of storage routes.
// Issued tokens are random, live in memory with their expiry, and are never logged.
//
//   internal::Auth auth;
//   auth.set_config(config);
//   if (auto route = internal::resolve_auth_route(req, segments)) reply = auth.execute(...);
//   else if (!auth.authorized(req)) reply = internal::Auth::unauthorized_reply();
#ifndef DATAFLUX_SRC_EMULATOR_AUTH_H_
#define DATAFLUX_SRC_EMULATOR_AUTH_H_

#include <httplib.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/emulator.h"
#include "emulator/routes.h"

namespace dataflux::emulator::internal {

enum class AuthRouteKind {
  kOAuthToken,     // POST /token
  kMetadataToken,  // GET /computeMetadata/v1/instance/service-accounts/{default,EMAIL}/token
  kMetadataEmail,  // GET .../service-accounts/{default,EMAIL}/email
  kMetadataRoot,   // GET /computeMetadata/v1 (a client's "am I on GCE?" probe)
  kMetadataOther,  // any other /computeMetadata path: 404
};

struct AuthRoute {
  AuthRouteKind kind = AuthRouteKind::kOAuthToken;
  std::string operation;  // "oauth.token", "metadata.token" or "metadata.other"
};

// nullopt when the request is not for the token endpoint or (with `metadata_server`) the
// metadata server.
std::optional<AuthRoute> resolve_auth_route(const httplib::Request& req,
                                            const std::vector<std::string>& segments,
                                            bool metadata_server);

// What a JWT-bearer assertion claims, once its signature is verified.
struct JwtClaims {
  std::string iss;
  std::string aud;
  std::string scope;
  std::int64_t iat = 0;
  std::int64_t exp = 0;
};

// Verifies an RS256 JWT against the PEM public keys by issuer (client_email) and checks its
// audience, scope and lifetime at `now_s` (Unix seconds). The error message is the OAuth2
// error code, then a space, then its description: "invalid_grant Invalid JWT Signature.".
absl::StatusOr<JwtClaims> verify_jwt_assertion(std::string_view assertion,
                                               const std::map<std::string, std::string>& keys,
                                               const std::string& token_uri, std::int64_t now_s);

// The fields of an x-www-form-urlencoded or JSON (object of strings) body; nullopt if malformed.
std::optional<std::map<std::string, std::string>> parse_token_form(const httplib::Request& req);

class Auth {
 public:
  Auth() : config_(std::make_shared<AuthConfig>()) {}

  void set_config(AuthConfig config);
  bool metadata_server() const;

  Reply execute(const AuthRoute& route, const httplib::Request& req, const std::string& token_uri,
                const std::string& default_email);

  // True when auth is not required, or the request carries a live bearer token issued here.
  bool authorized(const httplib::Request& req);
  static Reply unauthorized_reply();

  void expire_tokens();

 private:
  std::shared_ptr<const AuthConfig> config() const;
  Reply token_endpoint(const httplib::Request& req, const std::string& token_uri);
  Reply metadata(const AuthRoute& route, const httplib::Request& req,
                 const std::string& default_email);
  Reply issue_token(absl::Duration lifetime);

  mutable std::mutex mu_;
  std::shared_ptr<const AuthConfig> config_;
  // Live tokens and when they stop being accepted.
  std::map<std::string, std::chrono::steady_clock::time_point> tokens_;
};

}  // namespace dataflux::emulator::internal

#endif  // DATAFLUX_SRC_EMULATOR_AUTH_H_
