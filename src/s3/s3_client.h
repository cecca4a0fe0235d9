// S3Client: what every S3 operation shares — endpoint and addressing, credentials and the
// SigV4 signer, the transport and the retry policy — and the one place where an S3 error
// document becomes an absl::Status.
//
// The store, multipart uploads and in-flight asynchronous reads hold a shared_ptr<S3Client>,
// so an operation never outlives the transport it runs on.
//
//   S3Call call{"GET", "bucket", "key"};
//   auto response = client->execute([&] { return client->new_request(call); },
//                                   Idempotency::kIdempotent, "GET s3://bucket/key");
#ifndef DATAFLUX_SRC_S3_S3_CLIENT_H_
#define DATAFLUX_SRC_S3_S3_CLIENT_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/retry_policy.h"
#include "dataflux/s3.h"
#include "http/http_transport.h"
#include "s3/s3_config.h"

namespace dataflux::internal {

// One S3 request before it is addressed and signed.
struct S3Call {
  std::string method = "GET";
  std::string bucket;                                        // empty for service-level requests
  std::string key;                                           // empty for bucket-level requests
  std::vector<std::pair<std::string, std::string>> query;    // not encoded
  std::vector<std::pair<std::string, std::string>> headers;  // signed along with host/x-amz-*
  // The body: `body` (owned) or `body_view` (kept alive by the caller); view wins.
  std::string body;
  std::optional<std::string_view> body_view;
  bool sign_payload = true;  // false: UNSIGNED-PAYLOAD (large bodies carry their own checksum)
};

// "s3://bucket/key" (display_url), for messages; "s3://bucket" for an empty key.
std::string s3_url(std::string_view bucket, std::string_view key);

// The status for an S3 error code (NoSuchKey → NotFound, SlowDown → Unavailable...), falling
// back to the HTTP status when the code is unknown or empty.
absl::StatusCode status_code_for_s3_error(std::string_view code, long http_status);
// "<context>: HTTP 404 Not Found: NoSuchKey: The specified key does not exist." from an S3
// error document (or just the HTTP status when the body is not one).
absl::Status s3_error_status(long http_status, std::string_view body, std::string_view context);
// An <Error> document sent with 200 (CompleteMultipartUpload, CopyObject can): its status, or
// OK when `body` is not an error document.
absl::Status embedded_error(std::string_view body, std::string_view context);

class S3Client {
 public:
  static absl::StatusOr<std::shared_ptr<S3Client>> create(S3Options options);
  // For tests: a fixed configuration and clock (nullptr = real time).
  static std::shared_ptr<S3Client> create_for_test(S3Options options, S3Config config,
                                                   std::function<absl::Time()> now);

  const S3Config& config() const { return config_; }
  const S3Options& options() const { return options_; }
  HttpTransport& transport() { return transport_->get(); }  // made anew after fork()
  bool virtual_hosted(std::string_view bucket) const;

  // The addressed, signed request (Host, x-amz-date, x-amz-content-sha256, Authorization,
  // x-amz-security-token as needed).
  HttpRequest new_request(const S3Call& call) const;

  // OK for a complete 2xx response; otherwise the transport error or the S3 error.
  absl::Status check(const HttpResponse& response, std::string_view context) const;

  // Sends make() (called anew for every attempt, so each is freshly signed) under the retry
  // policy. Returns the first response check() accepts, or the final error.
  absl::StatusOr<HttpResponse> execute(const std::function<HttpRequest()>& make,
                                       Idempotency idempotency, std::string_view context);
  absl::StatusOr<HttpResponse> execute(const S3Call& call, Idempotency idempotency,
                                       std::string_view context) {
    return execute([&] { return new_request(call); }, idempotency, context);
  }

 private:
  S3Client(S3Options options, S3Config config, std::function<absl::Time()> now);

  S3Options options_;
  S3Config config_;
  std::string scheme_;  // "http" or "https"
  std::string host_;    // host[:port] of the endpoint
  std::string user_agent_;
  std::unique_ptr<TransportHandle> transport_;
  std::function<absl::Time()> now_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_S3_S3_CLIENT_H_
