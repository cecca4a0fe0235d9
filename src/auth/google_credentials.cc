// Google credentials: service account keys, authorized users (gcloud), the GCE metadata server,
// and Application Default Credentials choosing among them. Tokens live in the process-wide
// TokenCache; this file only knows how to get one and how to find the right source.
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "auth/oauth_flow.h"
#include "auth/token_cache.h"
#include "core/percent.h"
#include "dataflux/credentials.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"

namespace dataflux {
namespace {

using internal::AccessToken;
using internal::TokenCache;
using internal::TokenSource;

constexpr char kDefaultTokenUri[] = "https://oauth2.googleapis.com/token";
constexpr char kDefaultMetadataHost[] = "169.254.169.254";
constexpr char kJwtBearerGrant[] = "urn:ietf:params:oauth:grant-type:jwt-bearer";

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

absl::Duration to_absl(std::chrono::milliseconds d) { return absl::Milliseconds(d.count()); }

class ServiceAccountSource : public TokenSource {
 public:
  ServiceAccountSource(std::string email, std::string key_id, internal::PrivateKey key,
                       std::string token_uri, const std::string& origin, const AuthOptions& options)
      : email_(std::move(email)),
        key_id_(std::move(key_id)),
        key_(std::move(key)),
        token_uri_(std::move(token_uri)),
        scope_(absl::StrJoin(options.scopes, " ")),
        retry_(options.retry),
        what_(absl::StrCat("service account ", email_, " (", origin, ")")),
        cache_key_(
            absl::StrCat("service_account|", email_, "|", key_id_, "|", token_uri_, "|", scope_)) {}

  const std::string& cache_key() const override { return cache_key_; }

  absl::StatusOr<AccessToken> fetch() override {
    internal::JwtClaims claims;
    claims.key_id = key_id_;
    claims.issuer = email_;
    claims.scope = scope_;
    claims.audience = token_uri_;
    claims.issued_at = absl::Now();
    auto jwt = internal::make_jwt_assertion(key_.get(), claims);
    if (!jwt.ok())
      return absl::Status(jwt.status().code(), absl::StrCat(what_, ": ", jwt.status().message()));
    std::string form =
        absl::StrCat("grant_type=", internal::percent_encode(kJwtBearerGrant), "&assertion=", *jwt);
    return internal::request_token(token_uri_, std::move(form), retry_, what_, {*jwt});
  }

 private:
  const std::string email_;
  const std::string key_id_;
  const internal::PrivateKey key_;
  const std::string token_uri_;
  const std::string scope_;
  const RetryOptions retry_;
  const std::string what_;
  const std::string cache_key_;
};

class AuthorizedUserSource : public TokenSource {
 public:
  AuthorizedUserSource(std::string client_id, std::string client_secret, std::string refresh_token,
                       std::string token_uri, const std::string& origin, const AuthOptions& options)
      : client_id_(std::move(client_id)),
        client_secret_(std::move(client_secret)),
        refresh_token_(std::move(refresh_token)),
        token_uri_(std::move(token_uri)),
        retry_(options.retry),
        what_(
            absl::StrCat("authorized user credentials for client ", client_id_, " (", origin, ")")),
        // gcloud's client_id is shared by every user: the refresh token's digest tells them apart.
        cache_key_(absl::StrCat("authorized_user|", client_id_, "|",
                                internal::short_digest(refresh_token_), "|", token_uri_)) {}

  const std::string& cache_key() const override { return cache_key_; }

  absl::StatusOr<AccessToken> fetch() override {
    std::string form =
        absl::StrCat("grant_type=refresh_token&client_id=", internal::percent_encode(client_id_),
                     "&client_secret=", internal::percent_encode(client_secret_),
                     "&refresh_token=", internal::percent_encode(refresh_token_));
    return internal::request_token(token_uri_, std::move(form), retry_, what_,
                                   {client_secret_, refresh_token_});
  }

 private:
  const std::string client_id_;
  const std::string client_secret_;
  const std::string refresh_token_;
  const std::string token_uri_;
  const RetryOptions retry_;
  const std::string what_;
  const std::string cache_key_;
};

class MetadataSource : public TokenSource {
 public:
  MetadataSource(std::string host, const AuthOptions& options)
      : host_(std::move(host)),
        timeout_(to_absl(options.metadata_timeout)),
        retry_(options.retry),
        cache_key_(absl::StrCat("compute_engine|", host_)) {}

  const std::string& cache_key() const override { return cache_key_; }
  const std::string& host() const { return host_; }

  absl::StatusOr<AccessToken> fetch() override {
    // Until the server has answered once, no answer means there is none: fail fast.
    auto token = internal::request_metadata_token(host_, timeout_, retry_, seen_server_);
    if (token.ok()) seen_server_ = true;
    return token;
  }

 private:
  const std::string host_;
  const absl::Duration timeout_;
  const RetryOptions retry_;
  const std::string cache_key_;
  bool seen_server_ = false;  // only touched by fetch(), which the cache serializes per key
};

// Bearer tokens from a TokenSource through the process-wide cache.
class OAuthCredentials : public Credentials {
 public:
  OAuthCredentials(std::shared_ptr<TokenSource> source, std::chrono::seconds refresh_ahead)
      : source_(std::move(source)), refresh_ahead_(absl::Seconds(refresh_ahead.count())) {}

  absl::StatusOr<std::optional<std::string>> authorization_header() override {
    auto token = TokenCache::instance().get(*source_, refresh_ahead_);
    if (!token.ok()) return token.status();
    return std::optional<std::string>(absl::StrCat("Bearer ", token->token));
  }

  // Without the rejected header, a token fetched in the last two seconds is assumed to be newer
  // than the one rejected, so a burst of 401s still costs one refresh.
  void on_unauthorized() override {
    TokenCache::instance().invalidate_older_than(source_->cache_key(), absl::Seconds(2));
  }

  void on_unauthorized(std::string_view rejected_authorization) override {
    constexpr std::string_view kBearer = "Bearer ";
    if (rejected_authorization.substr(0, kBearer.size()) != kBearer) return;
    TokenCache::instance().invalidate(source_->cache_key(),
                                      rejected_authorization.substr(kBearer.size()));
  }

  TokenSource& source() { return *source_; }

 private:
  std::shared_ptr<TokenSource> source_;
  absl::Duration refresh_ahead_;
};

absl::StatusOr<std::string> string_field(const rapidjson::Value& doc, const char* name,
                                         const std::string& origin, bool required = true) {
  auto it = doc.FindMember(name);
  if (it == doc.MemberEnd() || (it->value.IsString() && it->value.GetStringLength() == 0)) {
    if (!required) return std::string();
    return absl::InvalidArgumentError(absl::StrCat(origin, ": field \"", name, "\" is missing"));
  }
  if (!it->value.IsString()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": field \"", name, "\" is not a string"));
  }
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

#define DATAFLUX_ASSIGN_FIELD(var, expr)        \
  auto var##_or = (expr);                       \
  if (!var##_or.ok()) return var##_or.status(); \
  std::string var = std::move(*var##_or)

absl::StatusOr<std::shared_ptr<Credentials>> parse_credentials(const std::string& json,
                                                               const std::string& origin,
                                                               const AuthOptions& options) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": invalid JSON at offset ", doc.GetErrorOffset(), ": ",
                     rapidjson::GetParseError_En(doc.GetParseError())));
  }
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": invalid JSON: not an object"));
  }
  DATAFLUX_ASSIGN_FIELD(type, string_field(doc, "type", origin));
  DATAFLUX_ASSIGN_FIELD(token_uri, string_field(doc, "token_uri", origin, false));
  if (token_uri.empty()) token_uri = kDefaultTokenUri;
  std::shared_ptr<TokenSource> source;
  if (type == "service_account") {
    DATAFLUX_ASSIGN_FIELD(email, string_field(doc, "client_email", origin));
    DATAFLUX_ASSIGN_FIELD(pem, string_field(doc, "private_key", origin));
    DATAFLUX_ASSIGN_FIELD(key_id, string_field(doc, "private_key_id", origin, false));
    auto key = internal::load_private_key(pem);
    if (!key.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": field \"private_key\" ", key.status().message()));
    }
    source =
        std::make_shared<ServiceAccountSource>(std::move(email), std::move(key_id), std::move(*key),
                                               std::move(token_uri), origin, options);
  } else if (type == "authorized_user") {
    DATAFLUX_ASSIGN_FIELD(client_id, string_field(doc, "client_id", origin));
    DATAFLUX_ASSIGN_FIELD(client_secret, string_field(doc, "client_secret", origin));
    DATAFLUX_ASSIGN_FIELD(refresh_token, string_field(doc, "refresh_token", origin));
    source = std::make_shared<AuthorizedUserSource>(std::move(client_id), std::move(client_secret),
                                                    std::move(refresh_token), std::move(token_uri),
                                                    origin, options);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": field \"type\" is \"", type,
                     "\"; supported types are \"service_account\" and \"authorized_user\""));
  }
  return std::shared_ptr<Credentials>(
      std::make_shared<OAuthCredentials>(std::move(source), options.refresh_ahead));
}

#undef DATAFLUX_ASSIGN_FIELD

absl::StatusOr<std::string> read_file(const std::string& path, const std::string& origin) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    std::string why = absl::StrCat(origin, ": cannot read: ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(why) : absl::FailedPreconditionError(why);
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::FailedPreconditionError(absl::StrCat(origin, ": cannot read"));
  return contents.str();
}

absl::StatusOr<std::shared_ptr<Credentials>> credentials_from_file(const std::string& path,
                                                                   const AuthOptions& options) {
  std::string origin = absl::StrCat("credentials file ", path);
  auto json = read_file(path, origin);
  if (!json.ok()) return json.status();
  return parse_credentials(*json, origin, options);
}

std::shared_ptr<OAuthCredentials> compute_engine_credentials(const AuthOptions& options) {
  std::string host = env("GCE_METADATA_HOST");
  if (host.empty()) host = kDefaultMetadataHost;
  return std::make_shared<OAuthCredentials>(std::make_shared<MetadataSource>(host, options),
                                            options.refresh_ahead);
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Application Default Credentials: the chain runs once, on first use, under `mu_`, so callers
// arriving meanwhile wait for that one resolution and share its outcome.
class DefaultCredentials : public Credentials {
 public:
  explicit DefaultCredentials(AuthOptions options) : options_(std::move(options)) {}

  absl::StatusOr<std::optional<std::string>> authorization_header() override {
    auto resolved = resolved_credentials();
    if (!resolved.ok()) return resolved.status();
    return (*resolved)->authorization_header();
  }
  void on_unauthorized() override {
    auto resolved = resolved_credentials();
    if (resolved.ok()) (*resolved)->on_unauthorized();
  }
  void on_unauthorized(std::string_view rejected_authorization) override {
    auto resolved = resolved_credentials();
    if (resolved.ok()) (*resolved)->on_unauthorized(rejected_authorization);
  }

 private:
  absl::StatusOr<std::shared_ptr<Credentials>> resolved_credentials() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!resolved_) {
      result_ = resolve();
      resolved_ = true;
    }
    return result_;
  }

  absl::StatusOr<std::shared_ptr<Credentials>> resolve() {
    std::vector<std::string> tried;
    if (!options_.credentials_file.empty() && !options_.credentials_json.empty()) {
      return absl::InvalidArgumentError(
          "AuthOptions: set credentials_file or credentials_json, not both");
    }
    if (!options_.credentials_file.empty()) {
      return credentials_from_file(options_.credentials_file, options_);
    }
    if (!options_.credentials_json.empty()) {
      return parse_credentials(options_.credentials_json, "credentials JSON", options_);
    }
    tried.push_back("AuthOptions.credentials_file and credentials_json: empty");

    // Explicit options win over the environment, the emulator's included (AuthOptions).
    std::string emulator = env("STORAGE_EMULATOR_HOST");
    if (!emulator.empty()) return make_anonymous_credentials();
    tried.push_back("STORAGE_EMULATOR_HOST: not set");

    std::string gac = env("GOOGLE_APPLICATION_CREDENTIALS");
    if (!gac.empty()) {
      auto creds = credentials_from_file(gac, options_);
      if (!creds.ok()) {
        return absl::Status(creds.status().code(), absl::StrCat("GOOGLE_APPLICATION_CREDENTIALS: ",
                                                                creds.status().message()));
      }
      return creds;
    }
    tried.push_back("GOOGLE_APPLICATION_CREDENTIALS: not set");

    std::string config = env("CLOUDSDK_CONFIG");
    std::string home = env("HOME");
    std::string well_known;
    if (!config.empty()) {
      well_known = absl::StrCat(config, "/application_default_credentials.json");
    } else if (!home.empty()) {
      well_known = absl::StrCat(home, "/.config/gcloud/application_default_credentials.json");
    }
    if (well_known.empty()) {
      tried.push_back("gcloud's well-known file: neither CLOUDSDK_CONFIG nor HOME is set");
    } else if (!file_exists(well_known)) {
      tried.push_back(absl::StrCat("gcloud's well-known file ", well_known, ": does not exist"));
    } else {
      return credentials_from_file(well_known, options_);
    }

    // A first token doubles as the probe: on a machine without a metadata server it fails
    // within metadata_timeout, and on GCE the token is then cached for the first request.
    auto metadata = compute_engine_credentials(options_);
    auto token = TokenCache::instance().get(metadata->source(),
                                            absl::Seconds(options_.refresh_ahead.count()));
    if (token.ok()) return std::shared_ptr<Credentials>(metadata);
    tried.push_back(absl::StrCat("GCE metadata server: ", token.status().message()));

    return absl::FailedPreconditionError(absl::StrCat(
        "no Application Default Credentials found; tried: ", absl::StrJoin(tried, "; "),
        ". Set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, run `gcloud auth "
        "application-default login`, or set GcsOptions.credentials"));
  }

  const AuthOptions options_;
  std::mutex mu_;
  bool resolved_ = false;
  absl::StatusOr<std::shared_ptr<Credentials>> result_;
};

}  // namespace

std::shared_ptr<Credentials> make_google_default_credentials(AuthOptions options) {
  return std::make_shared<DefaultCredentials>(std::move(options));
}

absl::StatusOr<std::shared_ptr<Credentials>> make_credentials_from_file(const std::string& path,
                                                                        AuthOptions options) {
  return credentials_from_file(path, options);
}

absl::StatusOr<std::shared_ptr<Credentials>> make_credentials_from_json(const std::string& json,
                                                                        AuthOptions options) {
  return parse_credentials(json, "credentials JSON", options);
}

std::shared_ptr<Credentials> make_compute_engine_credentials(AuthOptions options) {
  return compute_engine_credentials(options);
}

}  // namespace dataflux
