// GcsClient: what every GCS operation shares — endpoint, transport, credentials, retry options —
// and the one place where a request gets its headers and a response becomes an absl::Status.
//
// The store, its write sessions and its in-flight asynchronous reads all hold a
// shared_ptr<GcsClient>, so an operation never outlives the transport it runs on.
//
//   auto client = GcsClient::create(options).value();
//   auto response = client->execute([&] { return client->new_request("GET", url); },
//                                   Idempotency::kIdempotent, "GET gs://b/o");
#ifndef DATAFLUX_SRC_GCS_GCS_CLIENT_H_
#define DATAFLUX_SRC_GCS_GCS_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/retry_policy.h"
#include "dataflux/gcs.h"
#include "http/http_transport.h"

namespace dataflux::internal {

inline constexpr char kDefaultGcsEndpoint[] = "https://storage.googleapis.com";
inline constexpr char kUserAgent[] = "dataflux-cpp/0.1.0";

struct ResolvedEndpoint {
  std::string url;        // scheme://host[:port], no trailing '/'
  bool emulator = false;  // from STORAGE_EMULATOR_HOST: anonymous by default
};
// options.endpoint, else `emulator_host` (STORAGE_EMULATOR_HOST; nullptr or empty = unset, and
// "http://" is added when it has no scheme), else Google's endpoint.
ResolvedEndpoint resolve_endpoint(const std::string& option, const char* emulator_host);

class GcsClient {
 public:
  static absl::StatusOr<std::shared_ptr<GcsClient>> create(GcsOptions options);
  ~GcsClient();

  const std::string& endpoint() const { return endpoint_; }
  const GcsOptions& options() const { return options_; }
  HttpTransport& transport() { return transport_->get(); }  // made anew after fork()

  // A request to endpoint + path_and_query with the User-Agent header set.
  HttpRequest new_request(std::string method, std::string_view path_and_query) const;
  // A request to an absolute URL (a resumable session), with the User-Agent header set.
  HttpRequest new_request_to_url(std::string method, std::string url) const;

  // Adds the Authorization header, if the credentials give one.
  absl::Status authorize(HttpRequest& request) const;

  // OK for a complete 2xx/3xx response; otherwise the transport error or the HTTP error with the
  // server's message, prefixed with `context` ("GET gs://b/o").
  absl::Status check(const HttpResponse& response, std::string_view context) const;

  // For a 401 answered to an authorized request: asks the credentials for a fresh token and
  // says whether one more attempt is worth it (once per operation, tracked in *refreshed).
  // `sent_authorization` is the header the rejected request carried, so the credentials
  // refresh only if that token is still their current one.
  bool refresh_after_unauthorized(const HttpResponse& response, std::string_view sent_authorization,
                                  bool* refreshed) const;
  // The Authorization header value of `request`, or "".
  static std::string authorization_of(const HttpRequest& request);

  // Sends make() (called anew for every attempt) under the retry policy. Returns the first
  // response that check() accepts, or the final error.
  absl::StatusOr<HttpResponse> execute(const std::function<HttpRequest()>& make,
                                       Idempotency idempotency, std::string_view context);

 private:
  GcsClient(GcsOptions options, ResolvedEndpoint endpoint);

  GcsOptions options_;
  std::string endpoint_;
  bool emulator_;
  bool explicit_credentials_;
  std::string user_agent_;
  std::unique_ptr<TransportHandle> transport_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_GCS_GCS_CLIENT_H_
