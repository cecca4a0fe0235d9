// AWS Signature Version 4: the canonical request, the string to sign and the signature.
//
// Pure functions over strings, shared by the S3 client (which signs) and the emulator (which
// verifies), so both follow one reading of the specification; the worked examples from AWS's
// documentation and boto3 (an independent signer) check that reading in the tests.
//
//   SigV4Request r{"GET", "/bucket/key", {{"list-type", "2"}}, {{"host", "s3.local"}}, hash};
//   std::string signed_headers;
//   std::string canonical = canonical_request(r, &signed_headers);
//   std::string to_sign = string_to_sign("20130524T000000Z", scope, canonical);
//   std::string sig = sigv4_signature(secret, "20130524", "us-east-1", "s3", to_sign);
#ifndef DATAFLUX_SRC_CORE_SIGV4_H_
#define DATAFLUX_SRC_CORE_SIGV4_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dataflux::internal {

inline constexpr char kUnsignedPayload[] = "UNSIGNED-PAYLOAD";
inline constexpr char kSigV4Algorithm[] = "AWS4-HMAC-SHA256";

// Lowercase hex of SHA-256(data), and raw HMAC-SHA256(key, data).
std::string sha256_hex(std::string_view data);
std::string hmac_sha256(std::string_view key, std::string_view data);
std::string hex_lower(std::string_view bytes);
// Base64 of MD5(data), as in Content-MD5, and lowercase hex of MD5(data), as in S3 ETags.
std::string md5_base64_of(std::string_view data);
std::string md5_hex_of(std::string_view data);

struct SigV4Request {
  std::string method;
  std::string canonical_uri;  // the URI-encoded absolute path, e.g. "/bucket/my%20key"
  // Query parameters, not encoded; a parameter without a value has an empty value.
  std::vector<std::pair<std::string, std::string>> query;
  // The headers to sign (name in any case, value as sent). Host must be among them.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_hash;  // hex SHA-256 of the body, or UNSIGNED-PAYLOAD
};

// "a=1&b=&c%2Fd=e", sorted by encoded name, then value.
std::string canonical_query_string(std::vector<std::pair<std::string, std::string>> query);
// The canonical request; `signed_headers` receives "host;range;x-amz-date".
std::string canonical_request(const SigV4Request& request, std::string* signed_headers);
// "<date>/<region>/<service>/aws4_request".
std::string credential_scope(std::string_view date, std::string_view region,
                             std::string_view service);
std::string string_to_sign(std::string_view amz_date, std::string_view scope,
                           std::string_view canonical_request);
// Hex HMAC of `to_sign` under the key derived from the secret, date, region and service.
std::string sigv4_signature(std::string_view secret, std::string_view date, std::string_view region,
                            std::string_view service, std::string_view to_sign);

// The parts of an "AWS4-HMAC-SHA256 Credential=AK/date/region/service/aws4_request,
// SignedHeaders=a;b, Signature=hex" header; nullopt when malformed.
struct SigV4Authorization {
  std::string access_key_id;
  std::string date;
  std::string region;
  std::string service;
  std::vector<std::string> signed_headers;
  std::string signature;
};
std::optional<SigV4Authorization> parse_sigv4_authorization(std::string_view header);

// Constant-time comparison for signatures.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_SIGV4_H_
