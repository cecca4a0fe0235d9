#include "s3/s3_client.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/absl_view.h"
#include "core/http_status.h"
#include "core/percent.h"
#include "core/sigv4.h"
#include "s3/s3_xml.h"

namespace dataflux::internal {
namespace {

constexpr char kUserAgent[] = "dataflux-cpp/0.1.0";

// Buckets that can be a DNS label under the endpoint (no dots: TLS wildcards cover one label).
bool dns_safe_bucket(std::string_view bucket) {
  if (bucket.empty() || bucket.size() > 63) return false;
  for (char c : bucket) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

}  // namespace

std::string s3_url(std::string_view bucket, std::string_view key) {
  return display_url("s3", bucket, key);
}

absl::StatusCode status_code_for_s3_error(std::string_view code, long http_status) {
  using C = absl::StatusCode;
  struct Entry {
    const char* code;
    C status;
  };
  static constexpr Entry kTable[] = {
      {"NoSuchKey", C::kNotFound},
      {"NoSuchBucket", C::kNotFound},
      {"NoSuchUpload", C::kNotFound},
      {"NoSuchVersion", C::kNotFound},
      {"AccessDenied", C::kPermissionDenied},
      {"SignatureDoesNotMatch", C::kPermissionDenied},
      {"InvalidAccessKeyId", C::kPermissionDenied},
      {"AllAccessDisabled", C::kPermissionDenied},
      {"AccountProblem", C::kPermissionDenied},
      {"ExpiredToken", C::kUnauthenticated},
      {"InvalidToken", C::kUnauthenticated},
      {"TokenRefreshRequired", C::kUnauthenticated},
      {"SlowDown", C::kUnavailable},
      {"ServiceUnavailable", C::kUnavailable},
      {"InternalError", C::kUnavailable},
      {"RequestTimeout", C::kUnavailable},
      {"PreconditionFailed", C::kFailedPrecondition},
      {"ConditionalRequestConflict", C::kAborted},
      {"InvalidRange", C::kOutOfRange},
      {"BadDigest", C::kDataLoss},
      {"InvalidDigest", C::kInvalidArgument},
      {"EntityTooSmall", C::kInvalidArgument},
      {"EntityTooLarge", C::kInvalidArgument},
      {"InvalidPart", C::kInvalidArgument},
      {"InvalidPartOrder", C::kInvalidArgument},
      {"InvalidArgument", C::kInvalidArgument},
      {"InvalidBucketName", C::kInvalidArgument},
      {"MalformedXML", C::kInvalidArgument},
      {"KeyTooLongError", C::kInvalidArgument},
      {"BucketAlreadyExists", C::kAlreadyExists},
      {"BucketAlreadyOwnedByYou", C::kAlreadyExists},
      {"BucketNotEmpty", C::kFailedPrecondition},
      {"PermanentRedirect", C::kFailedPrecondition},
      {"AuthorizationHeaderMalformed", C::kFailedPrecondition},
      {"NotImplemented", C::kUnimplemented},
      {"MethodNotAllowed", C::kUnimplemented},
  };
  for (const auto& e : kTable) {
    if (code == e.code) return e.status;
  }
  return status_code_from_http(http_status);
}

absl::Status s3_error_status(long http_status, std::string_view body, std::string_view context) {
  std::string code;
  std::string message;
  std::string hint;
  if (auto doc = parse_xml(body); doc.ok() && doc->name == "Error") {
    code = doc->child_text("Code");
    message = doc->child_text("Message");
    if (code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed") {
      hint = " (the bucket is in another region: set S3Options.region or AWS_REGION)";
    }
  }
  std::string server = code.empty() ? message : absl::StrCat(code, ": ", message, hint);
  absl::Status status = status_from_http(http_status, context, server);
  if (code.empty() && status_code_from_http(http_status) == absl::StatusCode::kOk) {
    // A 3xx without a document: never a success for S3.
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(context), ": unexpected HTTP ", http_status, " (redirect)"));
  }
  absl::StatusCode mapped = status_code_for_s3_error(code, http_status);
  if (mapped == status.code()) return status;
  return absl::Status(mapped, status.message());
}

absl::Status embedded_error(std::string_view body, std::string_view context) {
  auto doc = parse_xml(body);
  if (!doc.ok() || doc->name != "Error") return absl::OkStatus();
  // Sent with 200; S3 means InternalError/SlowDown etc. exactly as if it were a 5xx.
  return s3_error_status(doc->child_text("Code") == "SlowDown" ? 503 : 500, body, context);
}

absl::StatusOr<std::shared_ptr<S3Client>> S3Client::create(S3Options options) {
  if (options.retry.max_attempts < 1) {
    return absl::InvalidArgumentError("S3Options.retry.max_attempts must be at least 1");
  }
  auto config = resolve_s3_config(options, process_environment());
  if (!config.ok()) return config.status();
  return std::shared_ptr<S3Client>(new S3Client(std::move(options), *std::move(config), nullptr));
}

std::shared_ptr<S3Client> S3Client::create_for_test(S3Options options, S3Config config,
                                                    std::function<absl::Time()> now) {
  return std::shared_ptr<S3Client>(
      new S3Client(std::move(options), std::move(config), std::move(now)));
}

S3Client::S3Client(S3Options options, S3Config config, std::function<absl::Time()> now)
    : options_(std::move(options)),
      config_(std::move(config)),
      user_agent_(kUserAgent),
      transport_(std::make_unique<TransportHandle>(options_.transport)),
      now_(now ? std::move(now) : [] { return absl::Now(); }) {
  auto sep = config_.endpoint.find("://");
  scheme_ = config_.endpoint.substr(0, sep);
  host_ = config_.endpoint.substr(sep + 3);
  // curl sends the port only when it is not the scheme's default; sign what it sends.
  if ((scheme_ == "https" && absl::EndsWith(host_, ":443")) ||
      (scheme_ == "http" && absl::EndsWith(host_, ":80"))) {
    host_ = host_.substr(0, host_.rfind(':'));
  }
  if (!options_.user_agent_suffix.empty())
    absl::StrAppend(&user_agent_, " ", options_.user_agent_suffix);
}

bool S3Client::virtual_hosted(std::string_view bucket) const {
  switch (config_.addressing) {
    case S3Addressing::kPath:
      return false;
    case S3Addressing::kVirtualHosted:
      return !bucket.empty();
    case S3Addressing::kAuto:
      return config_.aws_endpoint && dns_safe_bucket(bucket);
  }
  return false;
}

HttpRequest S3Client::new_request(const S3Call& call) const {
  const bool vhost = virtual_hosted(call.bucket);
  std::string host = vhost ? absl::StrCat(call.bucket, ".", host_) : host_;
  std::string path;
  if (!vhost && !call.bucket.empty()) absl::StrAppend(&path, "/", call.bucket);
  if (!call.key.empty()) absl::StrAppend(&path, "/", percent_encode(call.key, true));
  if (path.empty()) path = "/";
  std::string query = canonical_query_string(call.query);

  HttpRequest request;
  request.method = call.method;
  request.url = absl::StrCat(scheme_, "://", host, path, query.empty() ? "" : "?", query);
  std::string_view body = call.body_view ? *call.body_view : std::string_view(call.body);
  if (call.body_view) {
    request.body_view = call.body_view;
  } else {
    request.body = call.body;
  }
  request.headers.emplace_back("User-Agent", user_agent_);
  for (const auto& h : call.headers) request.headers.push_back(h);
  if (config_.credentials.anonymous) return request;

  const absl::Time now = now_();
  const std::string amz_date = absl::FormatTime("%Y%m%dT%H%M%SZ", now, absl::UTCTimeZone());
  const std::string date = amz_date.substr(0, 8);
  const std::string payload_hash = call.sign_payload ? sha256_hex(body) : kUnsignedPayload;
  SigV4Request sig;
  sig.method = call.method;
  sig.canonical_uri = path;
  sig.query = call.query;
  sig.payload_hash = payload_hash;
  sig.headers = call.headers;
  sig.headers.emplace_back("host", host);
  sig.headers.emplace_back("x-amz-date", amz_date);
  sig.headers.emplace_back("x-amz-content-sha256", payload_hash);
  if (!config_.credentials.session_token.empty()) {
    sig.headers.emplace_back("x-amz-security-token", config_.credentials.session_token);
  }
  std::string signed_headers;
  const std::string canonical = canonical_request(sig, &signed_headers);
  const std::string scope = credential_scope(date, config_.region, "s3");
  const std::string signature =
      sigv4_signature(config_.credentials.secret_access_key, date, config_.region, "s3",
                      string_to_sign(amz_date, scope, canonical));
  request.headers.emplace_back("Host", host);
  request.headers.emplace_back("x-amz-date", amz_date);
  request.headers.emplace_back("x-amz-content-sha256", payload_hash);
  if (!config_.credentials.session_token.empty()) {
    request.headers.emplace_back("x-amz-security-token", config_.credentials.session_token);
  }
  request.headers.emplace_back(
      "Authorization",
      absl::StrCat(kSigV4Algorithm, " Credential=", config_.credentials.access_key_id, "/", scope,
                   ", SignedHeaders=", signed_headers, ", Signature=", signature));
  return request;
}

absl::Status S3Client::check(const HttpResponse& response, std::string_view context) const {
  if (!response.status.ok()) return annotate(response.status, context);
  if (response.http_status >= 200 && response.http_status < 300) return absl::OkStatus();
  return s3_error_status(response.http_status, response.body, context);
}

absl::StatusOr<HttpResponse> S3Client::execute(const std::function<HttpRequest()>& make,
                                               Idempotency idempotency, std::string_view context) {
  return send_with_retry(transport_->get(), options_.retry, idempotency, make,
                         [&](const HttpResponse& response) { return check(response, context); });
}

}  // namespace dataflux::internal
