// The two credential kinds that need no network: anonymous, and a fixed bearer token.
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "dataflux/credentials.h"

namespace dataflux {
namespace {

class AnonymousCredentials : public Credentials {
 public:
  absl::StatusOr<std::optional<std::string>> authorization_header() override {
    return std::optional<std::string>();
  }
};

// The header is built once; the token itself is never printed, so a log of this object or of a
// failed request cannot leak it.
class AccessTokenCredentials : public Credentials {
 public:
  explicit AccessTokenCredentials(std::string token) : header_("Bearer " + std::move(token)) {}
  absl::StatusOr<std::optional<std::string>> authorization_header() override { return header_; }

 private:
  const std::optional<std::string> header_;
};

}  // namespace

std::shared_ptr<Credentials> make_anonymous_credentials() {
  return std::make_shared<AnonymousCredentials>();
}

std::shared_ptr<Credentials> make_access_token_credentials(std::string token) {
  return std::make_shared<AccessTokenCredentials>(std::move(token));
}

}  // namespace dataflux
