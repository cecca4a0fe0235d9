// Credentials: where the GCS store gets its Authorization header.
//
// The store asks for a header before each request and reports a 401 so the credentials can
// refresh once and the request be retried. Anonymous credentials (used with
// STORAGE_EMULATOR_HOST and for public buckets) send no header.
//
//   auto creds = dataflux::make_anonymous_credentials();
//   auto token = dataflux::make_access_token_credentials("ya29....");   // a fixed bearer token
//   dataflux::GcsOptions gcs;
//   gcs.credentials = token;
#ifndef DATAFLUX_CREDENTIALS_H_
#define DATAFLUX_CREDENTIALS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

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
};

std::shared_ptr<Credentials> make_anonymous_credentials();
// A fixed OAuth2 access token, sent as "Bearer <token>". It is never logged.
std::shared_ptr<Credentials> make_access_token_credentials(std::string token);

}  // namespace dataflux

#endif  // DATAFLUX_CREDENTIALS_H_
