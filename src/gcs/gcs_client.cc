#include "gcs/gcs_client.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/absl_view.h"
#include "core/http_status.h"
#include "gcs/gcs_json.h"

namespace dataflux::internal {
namespace {

std::string strip_trailing_slashes(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

ResolvedEndpoint resolve_endpoint(const std::string& option, const char* emulator_host) {
  ResolvedEndpoint out;
  if (!option.empty()) {
    out.url = strip_trailing_slashes(option);
    return out;  // not an emulator: a regional or PSC endpoint needs credentials like GCS's
  }
  if (emulator_host != nullptr && *emulator_host != '\0') {
    std::string host = emulator_host;
    if (host.find("://") == std::string::npos) host = "http://" + host;
    out.url = strip_trailing_slashes(std::move(host));
    out.emulator = true;
    return out;
  }
  out.url = kDefaultGcsEndpoint;
  return out;
}

absl::StatusOr<std::shared_ptr<GcsClient>> GcsClient::create(GcsOptions options) {
  ResolvedEndpoint endpoint =
      resolve_endpoint(options.endpoint, std::getenv("STORAGE_EMULATOR_HOST"));
  if (!absl::StartsWith(endpoint.url, "http://") && !absl::StartsWith(endpoint.url, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("GCS endpoint must start with http:// or https://: \"", endpoint.url, "\""));
  }
  if (options.retry.max_attempts < 1) {
    return absl::InvalidArgumentError("GcsOptions.retry.max_attempts must be at least 1");
  }
  if (options.anonymous && options.credentials) {
    return absl::InvalidArgumentError(
        "GcsOptions: anonymous and credentials are both set; choose one");
  }
  return std::shared_ptr<GcsClient>(new GcsClient(std::move(options), std::move(endpoint)));
}

GcsClient::GcsClient(GcsOptions options, ResolvedEndpoint endpoint)
    : options_(std::move(options)),
      endpoint_(std::move(endpoint.url)),
      emulator_(endpoint.emulator),
      explicit_credentials_(options_.credentials != nullptr),
      user_agent_(kUserAgent),
      transport_(std::make_unique<TransportHandle>(options_.transport)) {
  if (!options_.user_agent_suffix.empty())
    absl::StrAppend(&user_agent_, " ", options_.user_agent_suffix);
  if (options_.anonymous) {
    options_.credentials = make_anonymous_credentials();
  } else if (!options_.credentials) {
    // STORAGE_EMULATOR_HOST is anonymous unless told which credentials to use; anything else
    // gets Application Default Credentials, resolved on the first request.
    bool explicit_auth =
        !options_.auth.credentials_file.empty() || !options_.auth.credentials_json.empty();
    options_.credentials = emulator_ && !explicit_auth
                               ? make_anonymous_credentials()
                               : make_google_default_credentials(options_.auth);
  }
  options_.resumable_chunk_size = std::max<std::uint64_t>(options_.resumable_chunk_size, 1);
  constexpr std::uint64_t kQuantum = 256 << 10;
  options_.resumable_chunk_size =
      (options_.resumable_chunk_size + kQuantum - 1) / kQuantum * kQuantum;
}

GcsClient::~GcsClient() = default;

HttpRequest GcsClient::new_request(std::string method, std::string_view path_and_query) const {
  return new_request_to_url(std::move(method), absl::StrCat(endpoint_, av(path_and_query)));
}

HttpRequest GcsClient::new_request_to_url(std::string method, std::string url) const {
  HttpRequest request;
  request.method = std::move(method);
  request.url = std::move(url);
  request.headers.emplace_back("User-Agent", user_agent_);
  return request;
}

absl::Status GcsClient::authorize(HttpRequest& request) const {
  if (!options_.credentials) return absl::OkStatus();
  auto header = options_.credentials->authorization_header();
  if (!header.ok()) {
    return annotate(header.status(),
                    absl::StrCat(request.method, " ", request.url, ": cannot get credentials"));
  }
  if (header->has_value()) request.headers.emplace_back("Authorization", **header);
  return absl::OkStatus();
}

absl::Status GcsClient::check(const HttpResponse& response, std::string_view context) const {
  if (!response.status.ok()) return annotate(response.status, context);
  if (status_code_from_http(response.http_status) == absl::StatusCode::kOk) {
    return absl::OkStatus();
  }
  std::string message = error_message_from_body(response.body);
  if ((response.http_status == 401 || response.http_status == 403) && !explicit_credentials_ &&
      !emulator_ && !options_.anonymous) {
    absl::StrAppend(&message,
                    " (no credentials were configured, so Application Default Credentials were "
                    "used: set GOOGLE_APPLICATION_CREDENTIALS, GcsOptions.auth or "
                    "GcsOptions.credentials; see README \"Authentication\")");
  }
  return status_from_http(response.http_status, context, message);
}

bool GcsClient::refresh_after_unauthorized(const HttpResponse& response,
                                           std::string_view sent_authorization,
                                           bool* refreshed) const {
  if (!response.status.ok() || response.http_status != 401 || *refreshed || !options_.credentials) {
    return false;
  }
  *refreshed = true;
  options_.credentials->on_unauthorized(sent_authorization);
  return true;
}

std::string GcsClient::authorization_of(const HttpRequest& request) {
  for (const auto& [name, value] : request.headers) {
    if (name == "Authorization") return value;
  }
  return std::string();
}

absl::StatusOr<HttpResponse> GcsClient::execute(const std::function<HttpRequest()>& make,
                                                Idempotency idempotency, std::string_view context) {
  bool refreshed = false;
  std::string sent_authorization;
  return send_with_retry(
      transport_->get(), options_.retry, idempotency,
      [&]() -> absl::StatusOr<HttpRequest> {
        HttpRequest request = make();
        if (auto s = authorize(request); !s.ok()) return s;
        sent_authorization = authorization_of(request);
        return request;
      },
      [&](const HttpResponse& response) { return check(response, context); },
      [&](const HttpResponse& response) {
        return refresh_after_unauthorized(response, sent_authorization, &refreshed);
      });
}

}  // namespace dataflux::internal
