// Where the S3 backend's settings come from: options, then the environment, then the AWS
// shared credentials and config files, as the AWS CLI and SDKs resolve them. No network.
//
//   auto config = resolve_s3_config(options, Environment::process());
//   config->endpoint;      // "https://s3.eu-west-1.amazonaws.com"
//   config->credentials;   // access key, secret, session token (or anonymous)
#ifndef DATAFLUX_SRC_S3_S3_CONFIG_H_
#define DATAFLUX_SRC_S3_S3_CONFIG_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "dataflux/s3.h"

namespace dataflux::internal {

// Reads environment variables; tests substitute a map.
using Environment = std::function<std::optional<std::string>(const std::string& name)>;
Environment process_environment();

struct S3Credentials {
  bool anonymous = false;
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  std::string source;  // "options", "environment", "profile default in /root/.aws/credentials"
};

struct S3Config {
  std::string endpoint;  // scheme://host[:port], no trailing '/'
  std::string region;
  bool aws_endpoint = false;  // an amazonaws.com endpoint (virtual-hosted by default)
  S3Addressing addressing = S3Addressing::kAuto;  // kAuto is decided per bucket
  S3Credentials credentials;
};

// The sections of an INI file ("[default]", "[profile x]") with their key = value lines.
// Comments (# and ;) and blank lines are skipped; keys and values are trimmed.
std::map<std::string, std::map<std::string, std::string>> parse_ini(std::string_view text);

absl::StatusOr<S3Config> resolve_s3_config(const S3Options& options, const Environment& env);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_S3_S3_CONFIG_H_
