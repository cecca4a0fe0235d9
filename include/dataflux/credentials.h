// Credentials: where the GCS store gets its Authorization header.
//
// The store asks for a header before each request and reports a 401 so the credentials can
// refresh once and the request be retried. By default a GCS store uses Application Default
// Credentials, found in the order Google's client libraries use (see
// make_google_default_credentials); with an emulator (STORAGE_EMULATOR_HOST) it is anonymous.
// Tokens are cached once per process, refreshed ahead of expiry by one request while every
// other caller keeps using the valid token, and never appear in logs or error messages.
//
//   auto adc = dataflux::make_google_default_credentials().value();   // what most users want
//   auto key = dataflux::make_credentials_from_file("/secrets/sa.json").value();
//   dataflux::GcsOptions gcs;
//   gcs.credentials = key;
#ifndef DATAFLUX_CREDENTIALS_H_
#define DATAFLUX_CREDENTIALS_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dataflux/retry.h"

namespace dataflux {

class Credentials {
 public:
  virtual ~Credentials() = default;
  // The value of the Authorization header, or nullopt to send none. Thread-safe; may block
  // while a token is fetched, but implementations share one fetch among all callers.
  virtual absl::StatusOr<std::optional<std::string>> authorization_header() = 0;
  // A request carrying the header from authorization_header() was answered 401: the next call
  // should return a fresh token.
  virtual void on_unauthorized() {}
  // The same, naming the Authorization header value the server rejected, so credentials that
  // have already replaced that token keep the fresh one (many requests in flight with an old
  // token each see a 401, yet only one refresh should follow).
  virtual void on_unauthorized(std::string_view rejected_authorization) {
    (void)rejected_authorization;
    on_unauthorized();
  }
};

std::shared_ptr<Credentials> make_anonymous_credentials();
// A fixed OAuth2 access token, sent as "Bearer <token>". It is never logged.
std::shared_ptr<Credentials> make_access_token_credentials(std::string token);

inline constexpr char kDevstorageReadWriteScope[] =
    "https://www.googleapis.com/auth/devstorage.read_write";

struct AuthOptions {
  // An explicit credentials file (a service_account or authorized_user JSON) or its contents;
  // when set, they win over the environment. At most one of the two.
  std::string credentials_file;
  std::string credentials_json;
  std::vector<std::string> scopes{kDevstorageReadWriteScope};  // for service accounts
  std::chrono::seconds refresh_ahead{300};  // refresh this long before a token expires
  // Token endpoints (token_uri, the metadata server) retry transient failures with this.
  RetryOptions retry{/*max_attempts=*/5, std::chrono::milliseconds(100),
                     std::chrono::milliseconds(5'000), 2.0, std::chrono::milliseconds(60'000)};
  // Connect and total timeout for the GCE metadata server, so a machine without one fails
  // fast. GCE_METADATA_HOST (host[:port]) overrides its address (default 169.254.169.254).
  std::chrono::milliseconds metadata_timeout{1'000};
};

// Application Default Credentials, resolved on first use in this order:
//   1. options.credentials_file / credentials_json (they win over the environment);
//   2. STORAGE_EMULATOR_HOST set → anonymous;
//   3. GOOGLE_APPLICATION_CREDENTIALS (a service_account or authorized_user JSON file);
//   4. gcloud's well-known file: $CLOUDSDK_CONFIG/application_default_credentials.json, or
//      ~/.config/gcloud/application_default_credentials.json;
//   5. the GCE/GKE metadata server;
//   6. otherwise an error (returned by authorization_header) listing what was tried.
// Errors name the file and field at fault; a rejected key is PermissionDenied.
std::shared_ptr<Credentials> make_google_default_credentials(AuthOptions options = {});

// Credentials from a service_account or authorized_user JSON file, or its contents. Fails at
// once, naming the file and the missing or malformed field.
absl::StatusOr<std::shared_ptr<Credentials>> make_credentials_from_file(const std::string& path,
                                                                        AuthOptions options = {});
absl::StatusOr<std::shared_ptr<Credentials>> make_credentials_from_json(const std::string& json,
                                                                        AuthOptions options = {});
// The GCE/GKE metadata server's default service account.
std::shared_ptr<Credentials> make_compute_engine_credentials(AuthOptions options = {});

}  // namespace dataflux

#endif  // DATAFLUX_CREDENTIALS_H_
