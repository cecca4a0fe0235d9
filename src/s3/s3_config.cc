#include "s3/s3_config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/absl_view.h"

namespace dataflux::internal {
namespace {

std::optional<std::string> non_empty(const Environment& env, const char* name) {
  auto value = env(name);
  if (!value || value->empty()) return std::nullopt;
  return value;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string home_file(const Environment& env, const char* override_var, const char* name) {
  if (auto path = non_empty(env, override_var)) return *path;
  auto home = non_empty(env, "HOME");
  return absl::StrCat(home ? *home : std::string("."), "/.aws/", name);
}

// One profile's settings from the credentials file (section "[name]") and the config file
// (section "[profile name]", or "[default]"); the credentials file wins.
struct Profile {
  std::map<std::string, std::string> values;
  std::map<std::string, std::string> sources;  // key → file it came from
  bool found = false;
};

Profile load_profile(const Environment& env, const std::string& name) {
  Profile profile;
  const std::string credentials_path = home_file(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials");
  const std::string config_path = home_file(env, "AWS_CONFIG_FILE", "config");
  auto merge = [&](const std::string& path, const std::string& section) {
    auto text = read_file(path);
    if (!text) return;
    auto sections = parse_ini(*text);
    auto it = sections.find(section);
    if (it == sections.end()) return;
    profile.found = true;
    for (const auto& [key, value] : it->second) {
      if (profile.values.emplace(key, value).second) profile.sources[key] = path;
    }
  };
  merge(credentials_path, name);
  merge(config_path, name == "default" ? name : absl::StrCat("profile ", name));
  return profile;
}

std::string strip_trailing_slashes(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

Environment process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::map<std::string, std::map<std::string, std::string>> parse_ini(std::string_view text) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::string section;
  for (absl::string_view line : absl::StrSplit(av(text), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = std::string(absl::StripAsciiWhitespace(line.substr(1, line.size() - 2)));
      out[section];
      continue;
    }
    auto eq = line.find('=');
    if (eq == absl::string_view::npos || section.empty()) continue;
    std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(line.substr(0, eq)));
    out[section][key] = std::string(absl::StripAsciiWhitespace(line.substr(eq + 1)));
  }
  return out;
}

absl::StatusOr<S3Config> resolve_s3_config(const S3Options& options, const Environment& env) {
  S3Config config;
  config.addressing = options.addressing;
  std::string profile_name = options.profile;
  if (profile_name.empty()) profile_name = non_empty(env, "AWS_PROFILE").value_or("default");
  Profile profile = load_profile(env, profile_name);
  auto from_profile = [&](const char* key) -> std::optional<std::string> {
    auto it = profile.values.find(key);
    if (it == profile.values.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };

  config.region = options.region;
  if (config.region.empty()) {
    config.region = non_empty(env, "AWS_REGION")
                        .value_or(non_empty(env, "AWS_DEFAULT_REGION")
                                      .value_or(from_profile("region").value_or("us-east-1")));
  }

  std::string endpoint = options.endpoint;
  if (endpoint.empty()) {
    endpoint = non_empty(env, "AWS_ENDPOINT_URL_S3")
                   .value_or(non_empty(env, "AWS_ENDPOINT_URL")
                                 .value_or(from_profile("endpoint_url").value_or("")));
  }
  if (endpoint.empty()) endpoint = absl::StrCat("https://s3.", config.region, ".amazonaws.com");
  if (endpoint.find("://") == std::string::npos) endpoint = "https://" + endpoint;
  config.endpoint = strip_trailing_slashes(endpoint);
  if (!absl::StartsWith(config.endpoint, "http://") &&
      !absl::StartsWith(config.endpoint, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("S3 endpoint must use http:// or https://: \"", config.endpoint, "\""));
  }
  const std::string host_part = config.endpoint.substr(config.endpoint.find("://") + 3);
  if (host_part.empty() || host_part.find_first_of("/?# ") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "S3 endpoint must be scheme://host[:port] with no path: \"", config.endpoint, "\""));
  }
  const std::string host = host_part.substr(0, host_part.find(':'));
  config.aws_endpoint = absl::EndsWith(host, ".amazonaws.com");

  S3Credentials& creds = config.credentials;
  if (options.anonymous) {
    creds.anonymous = true;
    creds.source = "anonymous (S3Options.anonymous)";
    return config;
  }
  if (!options.access_key_id.empty() || !options.secret_access_key.empty()) {
    if (options.access_key_id.empty() || options.secret_access_key.empty()) {
      return absl::InvalidArgumentError(
          "S3Options needs both access_key_id and secret_access_key (or neither)");
    }
    creds.access_key_id = options.access_key_id;
    creds.secret_access_key = options.secret_access_key;
    creds.session_token = options.session_token;
    creds.source = "S3Options";
    return config;
  }
  auto env_key = non_empty(env, "AWS_ACCESS_KEY_ID");
  auto env_secret = non_empty(env, "AWS_SECRET_ACCESS_KEY");
  if (env_key && env_secret) {
    creds.access_key_id = *env_key;
    creds.secret_access_key = *env_secret;
    creds.session_token = non_empty(env, "AWS_SESSION_TOKEN").value_or("");
    creds.source = "environment (AWS_ACCESS_KEY_ID)";
    return config;
  }
  auto key = from_profile("aws_access_key_id");
  auto secret = from_profile("aws_secret_access_key");
  if (key && secret) {
    creds.access_key_id = *key;
    creds.secret_access_key = *secret;
    creds.session_token = from_profile("aws_session_token").value_or("");
    creds.source =
        absl::StrCat("profile ", profile_name, " in ", profile.sources["aws_access_key_id"]);
    return config;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "No S3 credentials found: set S3Options.access_key_id/secret_access_key, the environment "
      "variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or aws_access_key_id and "
      "aws_secret_access_key in profile \"",
      profile_name, "\" of ", home_file(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials"), " or ",
      home_file(env, "AWS_CONFIG_FILE", "config"), "; for public buckets set S3Options.anonymous"));
}

}  // namespace dataflux::internal
