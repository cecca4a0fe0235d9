#include "emulator/s3_routes.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "core/percent.h"
#include "core/sigv4.h"
#include "dataflux/crc32c.h"
#include "emulator/wire.h"
#include "s3/s3_xml.h"

namespace dataflux::emulator::internal {
namespace {

namespace df = ::dataflux::internal;

constexpr char kXmlHeader[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
constexpr char kNamespace[] = " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"";
constexpr std::uint64_t kMinPartSize = 5ull << 20;

bool is_gcs_or_control(const std::string& first) {
  return first == "storage" || first == "upload" || first == "download" || first == "batch" ||
         first == "resumable" || first == "_dataflux" || first == "token" ||
         first == "computeMetadata";
}

Reply xml_reply(int status, std::string body) {
  Reply r;
  r.status = status;
  r.content_type = "application/xml";
  r.body = absl::StrCat(kXmlHeader, body);
  return r;
}

std::string x(std::string_view text) { return df::xml_escape(text); }

std::string iso8601(std::int64_t micros) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMicros(micros),
                          absl::UTCTimeZone());
}
std::string http_date(std::int64_t micros) {
  return absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT", absl::FromUnixMicros(micros),
                          absl::UTCTimeZone());
}

constexpr char kEtagKey[] = "x-emulator-s3-etag";
constexpr char kChecksumKey[] = "x-emulator-s3-checksum-crc32c";

std::string etag_of(const ObjectRecord& o) {
  auto it = o.metadata.find(kEtagKey);
  if (it != o.metadata.end()) return it->second;
  std::string raw;
  absl::Base64Unescape(o.md5_base64, &raw);
  return absl::StrCat("\"", df::hex_lower(raw), "\"");
}

std::string checksum_of(const ObjectRecord& o) {
  auto it = o.metadata.find(kChecksumKey);
  if (it != o.metadata.end()) return it->second;
  return crc32c_to_base64(o.crc32c);
}

// The query of a request target as (name, value) pairs, decoded; nullopt on a bad escape.
std::optional<std::vector<std::pair<std::string, std::string>>> raw_query(
    const std::string& target) {
  std::vector<std::pair<std::string, std::string>> out;
  auto q = target.find('?');
  if (q == std::string::npos) return out;
  for (absl::string_view item : absl::StrSplit(target.substr(q + 1), '&', absl::SkipEmpty())) {
    auto eq = item.find('=');
    auto name = percent_decode(std::string(item.substr(0, eq)));
    auto value =
        percent_decode(eq == absl::string_view::npos ? "" : std::string(item.substr(eq + 1)));
    if (!name || !value) return std::nullopt;
    out.emplace_back(*name, *value);
  }
  return out;
}

// Checks Content-MD5 and x-amz-checksum-crc32c of a body; nullopt when they hold.
std::optional<Reply> check_digests(const httplib::Request& req, const std::string& body) {
  if (req.has_header("Content-MD5")) {
    const std::string sent = req.get_header_value("Content-MD5");
    std::string raw;
    if (!absl::Base64Unescape(sent, &raw) || raw.size() != 16) {
      return s3_error_reply(400, "InvalidDigest", "The Content-MD5 you specified was invalid.");
    }
    if (df::md5_base64_of(body) != sent) {
      return s3_error_reply(400, "BadDigest",
                            "The Content-MD5 you specified did not match what we received.");
    }
  }
  if (req.has_header("x-amz-checksum-crc32c")) {
    auto sent = crc32c_from_base64(req.get_header_value("x-amz-checksum-crc32c"));
    if (!sent) return s3_error_reply(400, "InvalidRequest", "Malformed x-amz-checksum-crc32c.");
    if (*sent != crc32c(body)) {
      return s3_error_reply(400, "BadDigest",
                            "The CRC32C you specified did not match the calculated checksum.");
    }
  }
  // GCS's XML API takes the same digests as `x-goog-hash: crc32c=...,md5=...` (the header may
  // be repeated, one hash each).
  GoogHash goog;
  for (std::size_t i = 0, n = req.get_header_value_count("x-goog-hash"); i < n; ++i) {
    GoogHash one = parse_goog_hash(req.get_header_value("x-goog-hash", i));
    if (!one.crc32c.empty()) goog.crc32c = one.crc32c;
    if (!one.md5.empty()) goog.md5 = one.md5;
  }
  if (!goog.crc32c.empty()) {
    auto sent = crc32c_from_base64(goog.crc32c);
    if (!sent) return s3_error_reply(400, "InvalidDigest", "Malformed crc32c in x-goog-hash.");
    if (*sent != crc32c(body)) {
      return s3_error_reply(400, "BadDigest",
                            "The CRC32C you specified did not match what we received.");
    }
  }
  if (!goog.md5.empty() && df::md5_base64_of(body) != goog.md5) {
    return s3_error_reply(400, "BadDigest",
                          "The MD5 you specified did not match what we received.");
  }
  return std::nullopt;
}

}  // namespace

Reply s3_error_reply(int http_status, const std::string& code, const std::string& message,
                     const std::string& resource) {
  return xml_reply(http_status, absl::StrCat("<Error><Code>", x(code), "</Code><Message>",
                                             x(message), "</Message><Resource>", x(resource),
                                             "</Resource><RequestId>emulator</RequestId></Error>"));
}

std::optional<S3Route> resolve_s3_route(const httplib::Request& req,
                                        const std::vector<std::string>& segments) {
  if (!segments.empty() && is_gcs_or_control(segments[0])) return std::nullopt;
  S3Route r;
  const std::string& m = req.method;
  auto set = [&](S3RouteKind kind, const char* op) {
    r.kind = kind;
    r.operation = op;
    return r;
  };
  if (segments.empty() || (segments.size() == 1 && segments[0].empty())) {
    if (m == "GET") return set(S3RouteKind::kListBuckets, "s3.list_buckets");
    return std::nullopt;
  }
  r.bucket = segments[0];
  // The key is everything after "/bucket/", slashes included (empty segments too).
  if (segments.size() > 1) {
    std::vector<std::string> rest(segments.begin() + 1, segments.end());
    r.key = absl::StrJoin(rest, "/");
  }
  if (r.key.empty()) {
    if (m == "GET" && req.has_param("uploads")) {
      return set(S3RouteKind::kListMultipartUploads, "s3.list_multipart_uploads");
    }
    if (m == "GET") return set(S3RouteKind::kListObjects, "s3.list");
    if (m == "PUT") return set(S3RouteKind::kCreateBucket, "s3.create_bucket");
    if (m == "HEAD") return set(S3RouteKind::kHeadBucket, "s3.head_bucket");
    if (m == "DELETE") return set(S3RouteKind::kDeleteBucket, "s3.delete_bucket");
    if (m == "POST" && req.has_param("delete")) {
      return set(S3RouteKind::kDeleteObjects, "s3.delete_objects");
    }
    return std::nullopt;
  }
  if (m == "GET") return set(S3RouteKind::kGetObject, "s3.get");
  if (m == "HEAD") return set(S3RouteKind::kHeadObject, "s3.head");
  if (m == "PUT" && req.has_param("partNumber") && req.has_param("uploadId")) {
    return set(S3RouteKind::kUploadPart, "s3.upload_part");
  }
  if (m == "PUT" && req.has_header("x-amz-copy-source")) {
    return set(S3RouteKind::kCopyObject, "s3.copy");
  }
  if (m == "PUT") return set(S3RouteKind::kPutObject, "s3.put");
  if (m == "POST" && req.has_param("uploads")) {
    return set(S3RouteKind::kCreateMultipart, "s3.create_multipart");
  }
  if (m == "POST" && req.has_param("uploadId")) {
    return set(S3RouteKind::kCompleteMultipart, "s3.complete_multipart");
  }
  if (m == "DELETE" && req.has_param("uploadId")) {
    return set(S3RouteKind::kAbortMultipart, "s3.abort_multipart");
  }
  if (m == "DELETE") return set(S3RouteKind::kDeleteObject, "s3.delete");
  return std::nullopt;
}

void S3Service::set_config(S3Config config) {
  std::lock_guard<std::mutex> lock(mu_);
  config_ = std::move(config);
}

std::optional<Reply> S3Service::authenticate(const httplib::Request& req) const {
  S3Config config;
  {
    std::lock_guard<std::mutex> lock(mu_);
    config = config_;
  }
  if (!req.has_header("Authorization")) {
    if (config.allow_anonymous) return std::nullopt;
    return s3_error_reply(403, "AccessDenied", "Anonymous access is not allowed.");
  }
  auto auth = df::parse_sigv4_authorization(req.get_header_value("Authorization"));
  if (!auth || auth->service != "s3") {
    return s3_error_reply(400, "AuthorizationHeaderMalformed",
                          "The authorization header is malformed.");
  }
  auto secret = config.access_keys.find(auth->access_key_id);
  if (secret == config.access_keys.end()) {
    return s3_error_reply(403, "InvalidAccessKeyId",
                          "The AWS Access Key Id you provided does not exist in our records.");
  }
  const std::string amz_date = req.get_header_value("x-amz-date");
  if (amz_date.size() < 8 || amz_date.substr(0, 8) != auth->date) {
    return s3_error_reply(403, "SignatureDoesNotMatch",
                          "x-amz-date is missing or does not match the credential scope.");
  }
  df::SigV4Request sig;
  sig.method = req.method;
  const std::string path = req.target.substr(0, req.target.find('?'));
  auto decoded = percent_decode(path);
  auto query = raw_query(req.target);
  if (!decoded || !query) return s3_error_reply(400, "InvalidURI", "Malformed URI escape.");
  sig.canonical_uri = df::percent_encode(*decoded, true);
  sig.query = *std::move(query);
  for (const auto& name : auth->signed_headers) {
    const std::size_t n = req.get_header_value_count(name.c_str());
    for (std::size_t i = 0; i < n; ++i) {
      sig.headers.emplace_back(name, req.get_header_value(name.c_str(), i));
    }
    if (n == 0) sig.headers.emplace_back(name, "");
  }
  sig.payload_hash = req.get_header_value("x-amz-content-sha256");
  if (sig.payload_hash.empty()) {
    return s3_error_reply(400, "InvalidRequest", "Missing required header x-amz-content-sha256.");
  }
  if (sig.payload_hash != df::kUnsignedPayload && df::sha256_hex(req.body) != sig.payload_hash) {
    return s3_error_reply(400, "XAmzContentSHA256Mismatch",
                          "The provided 'x-amz-content-sha256' header does not match what was "
                          "computed.");
  }
  const std::string to_sign =
      df::string_to_sign(amz_date, df::credential_scope(auth->date, auth->region, auth->service),
                         df::canonical_request(sig, nullptr));
  const std::string expected =
      df::sigv4_signature(secret->second, auth->date, auth->region, auth->service, to_sign);
  if (!df::constant_time_equal(expected, auth->signature)) {
    return s3_error_reply(403, "SignatureDoesNotMatch",
                          "The request signature we calculated does not match the signature "
                          "you provided. Check your key and signing method.");
  }
  return std::nullopt;
}

Reply S3Service::store_error(const absl::Status& status, const S3Route& route) {
  const std::string resource = absl::StrCat("/", route.bucket, "/", route.key);
  if (status.code() == absl::StatusCode::kNotFound) {
    if (!store_->get_bucket(route.bucket).ok()) {
      return s3_error_reply(404, "NoSuchBucket", "The specified bucket does not exist.",
                            route.bucket);
    }
    return s3_error_reply(404, "NoSuchKey", "The specified key does not exist.", resource);
  }
  if (status.code() == absl::StatusCode::kFailedPrecondition) {
    return s3_error_reply(412, "PreconditionFailed",
                          "At least one of the pre-conditions you specified did not hold",
                          resource);
  }
  if (status.code() == absl::StatusCode::kResourceExhausted) {
    return s3_error_reply(400, "EntityTooLarge", std::string(status.message()), resource);
  }
  const int http = http_status_for(status);
  return s3_error_reply(http, http >= 500 ? "InternalError" : "InvalidRequest",
                        std::string(status.message()), resource);
}

Reply S3Service::execute(const S3Route& route, const httplib::Request& req) {
  switch (route.kind) {
    case S3RouteKind::kListBuckets:
      return list_buckets();
    case S3RouteKind::kCreateBucket: {
      auto s = store_->create_bucket(route.bucket, "");
      if (s.code() == absl::StatusCode::kAlreadyExists || s.code() == absl::StatusCode::kAborted) {
        return s3_error_reply(409, "BucketAlreadyOwnedByYou",
                              "Your previous request to create the named bucket succeeded.",
                              route.bucket);
      }
      if (!s.ok()) return s3_error_reply(400, "InvalidBucketName", std::string(s.message()));
      Reply r;
      r.headers.emplace_back("Location", "/" + route.bucket);
      return r;
    }
    case S3RouteKind::kHeadBucket:
      if (!store_->get_bucket(route.bucket).ok()) {
        return s3_error_reply(404, "NoSuchBucket", "The specified bucket does not exist.");
      }
      return Reply{};
    case S3RouteKind::kDeleteBucket: {
      auto s = store_->delete_bucket(route.bucket);
      if (s.code() == absl::StatusCode::kNotFound) return store_error(s, route);
      if (!s.ok()) {
        return s3_error_reply(409, "BucketNotEmpty", "The bucket you tried to delete is not empty",
                              route.bucket);
      }
      Reply r;
      r.status = 204;
      return r;
    }
    case S3RouteKind::kListObjects:
      return list_objects(route, req);
    case S3RouteKind::kDeleteObjects:
      return delete_objects(route, req);
    case S3RouteKind::kGetObject:
      return get_object(route, req, false);
    case S3RouteKind::kHeadObject:
      return get_object(route, req, true);
    case S3RouteKind::kPutObject:
      return put_object(route, req);
    case S3RouteKind::kCopyObject:
      return copy_object(route, req);
    case S3RouteKind::kDeleteObject:
      return delete_object(route);
    case S3RouteKind::kCreateMultipart:
      return create_multipart(route, req);
    case S3RouteKind::kUploadPart:
      return upload_part(route, req);
    case S3RouteKind::kCompleteMultipart:
      return complete_multipart(route, req);
    case S3RouteKind::kAbortMultipart:
      return abort_multipart(route, req);
    case S3RouteKind::kListMultipartUploads:
      return list_multipart_uploads(route, req);
  }
  return s3_error_reply(501, "NotImplemented", "Not implemented");
}

Reply S3Service::list_buckets() {
  std::string body = absl::StrCat("<ListAllMyBucketsResult", kNamespace,
                                  "><Owner><ID>emulator</ID></Owner><Buckets>");
  for (const auto& b : store_->list_buckets("")) {
    absl::StrAppend(&body, "<Bucket><Name>", x(b.name), "</Name><CreationDate>",
                    iso8601(b.created_us), "</CreationDate></Bucket>");
  }
  absl::StrAppend(&body, "</Buckets></ListAllMyBucketsResult>");
  return xml_reply(200, std::move(body));
}

Reply S3Service::list_objects(const S3Route& route, const httplib::Request& req) {
  auto param = [&](const char* name) { return req.get_param_value(name); };
  ListQuery q;
  q.prefix = param("prefix");
  q.delimiter = param("delimiter");
  q.page_token = param("continuation-token");
  const std::string start_after = param("start-after");
  if (!start_after.empty()) q.start_offset = start_after + std::string(1, '\0');  // exclusive
  std::uint64_t max_keys = 1000;
  if (req.has_param("max-keys")) {
    auto parsed = parse_u64(param("max-keys"));
    if (!parsed) return s3_error_reply(400, "InvalidArgument", "max-keys must be a number");
    max_keys = std::min<std::uint64_t>(*parsed, 1000);
  }
  q.max_results = std::max<std::uint64_t>(max_keys, 1);
  auto page = store_->list(route.bucket, q);
  if (!page.ok()) {
    if (page.status().code() == absl::StatusCode::kNotFound)
      return store_error(page.status(), route);
    return s3_error_reply(400, "InvalidArgument", std::string(page.status().message()));
  }
  if (max_keys == 0) {
    page->items.clear();
    page->prefixes.clear();
    page->next_page_token.clear();
  }
  std::string body = absl::StrCat("<ListBucketResult", kNamespace, "><Name>", x(route.bucket),
                                  "</Name><Prefix>", x(q.prefix), "</Prefix>");
  if (!q.delimiter.empty()) absl::StrAppend(&body, "<Delimiter>", x(q.delimiter), "</Delimiter>");
  absl::StrAppend(&body, "<MaxKeys>", max_keys, "</MaxKeys><KeyCount>",
                  page->items.size() + page->prefixes.size(), "</KeyCount><IsTruncated>",
                  page->next_page_token.empty() ? "false" : "true", "</IsTruncated>");
  if (!q.page_token.empty()) {
    absl::StrAppend(&body, "<ContinuationToken>", x(q.page_token), "</ContinuationToken>");
  }
  if (!page->next_page_token.empty()) {
    absl::StrAppend(&body, "<NextContinuationToken>", x(page->next_page_token),
                    "</NextContinuationToken>");
  }
  if (!start_after.empty()) absl::StrAppend(&body, "<StartAfter>", x(start_after), "</StartAfter>");
  for (const auto& o : page->items) {
    absl::StrAppend(&body, "<Contents><Key>", x(o.name), "</Key><LastModified>",
                    iso8601(o.updated_us), "</LastModified><ETag>", x(etag_of(o)), "</ETag><Size>",
                    o.size(), "</Size><StorageClass>STANDARD</StorageClass>", "</Contents>");
  }
  for (const auto& p : page->prefixes) {
    absl::StrAppend(&body, "<CommonPrefixes><Prefix>", x(p), "</Prefix></CommonPrefixes>");
  }
  absl::StrAppend(&body, "</ListBucketResult>");
  return xml_reply(200, std::move(body));
}

Reply S3Service::delete_objects(const S3Route& route, const httplib::Request& req) {
  if (!req.has_header("Content-MD5") && !req.has_header("x-amz-checksum-crc32c")) {
    return s3_error_reply(400, "InvalidRequest",
                          "Missing required header for this request: Content-MD5");
  }
  if (auto bad = check_digests(req, req.body)) return *bad;
  auto doc = df::parse_xml(req.body);
  if (!doc.ok() || doc->name != "Delete") {
    return s3_error_reply(400, "MalformedXML", "The XML you provided was not well-formed.");
  }
  const auto objects = doc->children_named("Object");
  if (objects.size() > 1000) {
    return s3_error_reply(400, "MalformedXML", "At most 1000 keys per request.");
  }
  if (!store_->get_bucket(route.bucket).ok()) return store_error(absl::NotFoundError(""), route);
  const bool quiet = doc->child_text("Quiet") == "true";
  std::string body = absl::StrCat("<DeleteResult", kNamespace, ">");
  for (const df::XmlElement* o : objects) {
    const std::string key = o->child_text("Key");
    auto s = store_->remove(route.bucket, key, std::nullopt, {});
    if (!s.ok() && s.code() != absl::StatusCode::kNotFound) {
      absl::StrAppend(&body, "<Error><Key>", x(key), "</Key><Code>InternalError</Code><Message>",
                      x(std::string(s.message())), "</Message></Error>");
    } else if (!quiet) {
      absl::StrAppend(&body, "<Deleted><Key>", x(key), "</Key></Deleted>");
    }
  }
  absl::StrAppend(&body, "</DeleteResult>");
  return xml_reply(200, std::move(body));
}

Reply S3Service::get_object(const S3Route& route, const httplib::Request& req, bool head) {
  auto object = store_->get(route.bucket, route.key, std::nullopt);
  if (!object.ok()) return store_error(object.status(), route);
  const std::string etag = etag_of(*object);
  if (req.has_header("If-Match") && req.get_header_value("If-Match") != etag &&
      req.get_header_value("If-Match") != "*") {
    return s3_error_reply(412, "PreconditionFailed",
                          "At least one of the pre-conditions you specified did not hold");
  }
  Reply r;
  r.content_type = object->content_type.empty() ? "binary/octet-stream" : object->content_type;
  r.headers = {
      {"ETag", etag}, {"Last-Modified", http_date(object->updated_us)}, {"Accept-Ranges", "bytes"}};
  if (req.get_header_value("x-amz-checksum-mode") == "ENABLED") {
    const std::string checksum = checksum_of(*object);
    r.headers.emplace_back("x-amz-checksum-crc32c", checksum);
    r.headers.emplace_back("x-amz-checksum-type",
                           absl::StrContains(checksum, "-") ? "COMPOSITE" : "FULL_OBJECT");
  }
  const std::uint64_t size = object->size();
  r.blob = object->blob;
  r.offset = 0;
  r.length = size;
  if (!head && req.has_header("Range")) {
    ByteRange range;
    switch (parse_range(req.get_header_value("Range"), size, &range)) {
      case RangeResult::kOk:
        r.status = 206;
        r.offset = range.first;
        r.length = range.last - range.first + 1;
        r.headers.emplace_back("Content-Range",
                               absl::StrCat("bytes ", range.first, "-", range.last, "/", size));
        break;
      case RangeResult::kUnsatisfiable: {
        Reply e = s3_error_reply(416, "InvalidRange", "The requested range is not satisfiable");
        e.headers.emplace_back("Content-Range", absl::StrCat("bytes */", size));
        return e;
      }
      case RangeResult::kMalformed:
      case RangeResult::kNone:
        break;  // S3 ignores a Range it cannot parse and sends the whole object
    }
  }
  if (r.length == 0) r.blob = nullptr;
  return r;
}

Reply S3Service::put_object(const S3Route& route, const httplib::Request& req) {
  if (req.body.size() > max_object_bytes_) {
    return s3_error_reply(400, "EntityTooLarge", "Your proposed upload exceeds the maximum size.");
  }
  if (auto bad = check_digests(req, req.body)) return *bad;
  NewObject meta;
  meta.content_type = req.get_header_value("Content-Type");
  if (meta.content_type.empty()) meta.content_type = "binary/octet-stream";
  Preconditions pre;
  if (req.get_header_value("If-None-Match") == "*") pre.if_generation_match = 0;
  auto object = store_->insert(route.bucket, route.key, req.body, meta, pre);
  if (!object.ok()) return store_error(object.status(), route);
  Reply r;
  r.headers.emplace_back("ETag", etag_of(*object));
  if (req.has_header("x-amz-checksum-crc32c")) {
    r.headers.emplace_back("x-amz-checksum-crc32c", crc32c_to_base64(object->crc32c));
  }
  return r;
}

Reply S3Service::copy_object(const S3Route& route, const httplib::Request& req) {
  std::string source = req.get_header_value("x-amz-copy-source");
  source = source.substr(0, source.find('?'));  // ?versionId=...
  auto decoded = percent_decode(source);
  if (!decoded) return s3_error_reply(400, "InvalidArgument", "Bad x-amz-copy-source");
  std::string path = *decoded;
  if (!path.empty() && path[0] == '/') path.erase(0, 1);
  auto slash = path.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == path.size()) {
    return s3_error_reply(400, "InvalidArgument", "x-amz-copy-source must be bucket/key");
  }
  S3Route src{S3RouteKind::kGetObject, "", path.substr(0, slash), path.substr(slash + 1)};
  auto source_object = store_->get(src.bucket, src.key, std::nullopt);
  if (!source_object.ok()) return store_error(source_object.status(), src);
  Preconditions pre;
  if (req.get_header_value("If-None-Match") == "*") pre.if_generation_match = 0;
  // Plain metadata on the copy: a copied multipart object gets a plain MD5 ETag, as on S3.
  NewObject meta;
  meta.content_type = source_object->content_type;
  auto object = store_->copy(src.bucket, src.key, std::nullopt, route.bucket, route.key, meta, pre);
  if (!object.ok()) return store_error(object.status(), route);
  return xml_reply(200, absl::StrCat("<CopyObjectResult", kNamespace, "><LastModified>",
                                     iso8601(object->updated_us), "</LastModified><ETag>",
                                     x(etag_of(*object)), "</ETag></CopyObjectResult>"));
}

Reply S3Service::delete_object(const S3Route& route) {
  auto s = store_->remove(route.bucket, route.key, std::nullopt, {});
  if (!s.ok() &&
      !(s.code() == absl::StatusCode::kNotFound && store_->get_bucket(route.bucket).ok())) {
    return store_error(s, route);
  }
  Reply r;
  r.status = 204;
  return r;
}

Reply S3Service::create_multipart(const S3Route& route, const httplib::Request& req) {
  if (!store_->get_bucket(route.bucket).ok()) return store_error(absl::NotFoundError(""), route);
  Upload upload;
  upload.bucket = route.bucket;
  upload.key = route.key;
  upload.content_type = req.get_header_value("Content-Type");
  const std::string algorithm = req.get_header_value("x-amz-checksum-algorithm");
  if (!algorithm.empty() && algorithm != "CRC32C") {
    return s3_error_reply(400, "InvalidRequest", "Only the CRC32C checksum algorithm is emulated.");
  }
  upload.crc32c_algorithm = algorithm == "CRC32C";
  const std::string type = req.get_header_value("x-amz-checksum-type");
  if (!type.empty() && type != "COMPOSITE" && type != "FULL_OBJECT") {
    return s3_error_reply(400, "InvalidRequest", "Value for x-amz-checksum-type is invalid.");
  }
  if (!type.empty() && !upload.crc32c_algorithm) {
    return s3_error_reply(400, "InvalidRequest",
                          "x-amz-checksum-type requires x-amz-checksum-algorithm.");
  }
  upload.full_object = type == "FULL_OBJECT";
  upload.initiated_us = absl::ToUnixMicros(absl::Now());
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = absl::StrCat("emulator-upload-", ++next_upload_);
    uploads_[id] = std::move(upload);
  }
  return xml_reply(
      200, absl::StrCat("<InitiateMultipartUploadResult", kNamespace, "><Bucket>", x(route.bucket),
                        "</Bucket><Key>", x(route.key), "</Key><UploadId>", x(id),
                        "</UploadId></InitiateMultipartUploadResult>"));
}

Reply S3Service::upload_part(const S3Route& route, const httplib::Request& req) {
  auto number = parse_u64(req.get_param_value("partNumber"));
  if (!number || *number < 1 || *number > 10000) {
    return s3_error_reply(400, "InvalidArgument", "Part number must be an integer in 1..10000");
  }
  if (auto bad = check_digests(req, req.body)) return *bad;
  Part part;
  part.data = req.body;
  part.md5_hex = df::md5_hex_of(part.data);
  part.crc32c = crc32c(part.data);
  Reply r;
  r.headers.emplace_back("ETag", absl::StrCat("\"", part.md5_hex, "\""));
  if (req.has_header("x-amz-checksum-crc32c")) {
    r.headers.emplace_back("x-amz-checksum-crc32c", crc32c_to_base64(part.crc32c));
  }
  // GCS's XML API answers an uploaded part with its CRC32C and MD5 (its "Object upload part"
  // page), which clients such as gcloud check; S3 clients ignore the header.
  r.headers.emplace_back("x-goog-hash", absl::StrCat("crc32c=", crc32c_to_base64(part.crc32c),
                                                     ",md5=", df::md5_base64_of(part.data)));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = uploads_.find(req.get_param_value("uploadId"));
  if (it == uploads_.end() || it->second.bucket != route.bucket || it->second.key != route.key) {
    return s3_error_reply(404, "NoSuchUpload", "The specified upload does not exist.");
  }
  it->second.parts[static_cast<int>(*number)] = std::move(part);
  return r;
}

Reply S3Service::complete_multipart(const S3Route& route, const httplib::Request& req) {
  auto doc = df::parse_xml(req.body);
  if (!doc.ok() || doc->name != "CompleteMultipartUpload") {
    return s3_error_reply(400, "MalformedXML", "The XML you provided was not well-formed.");
  }
  const std::string id = req.get_param_value("uploadId");
  Upload upload;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = uploads_.find(id);
    if (it == uploads_.end() || it->second.bucket != route.bucket || it->second.key != route.key) {
      return s3_error_reply(404, "NoSuchUpload", "The specified upload does not exist.");
    }
    upload = it->second;  // a copy: parts stay until the object is stored
  }
  const auto listed = doc->children_named("Part");
  if (listed.empty()) {
    return s3_error_reply(400, "MalformedXML", "You must specify at least one part.");
  }
  std::string data;
  std::string md5s;
  int previous = 0;
  for (std::size_t i = 0; i < listed.size(); ++i) {
    auto number = parse_u64(listed[i]->child_text("PartNumber"));
    if (!number || static_cast<int>(*number) <= previous) {
      return s3_error_reply(400, "InvalidPartOrder",
                            "The list of parts was not in ascending order.");
    }
    previous = static_cast<int>(*number);
    auto part = upload.parts.find(previous);
    std::string etag = listed[i]->child_text("ETag");
    if (!etag.empty() && etag.front() != '"') etag = absl::StrCat("\"", etag, "\"");
    if (part == upload.parts.end() || etag != absl::StrCat("\"", part->second.md5_hex, "\"")) {
      return s3_error_reply(400, "InvalidPart",
                            absl::StrCat("One or more of the specified parts could not be found "
                                         "or its entity tag did not match (part ",
                                         previous, ")."));
    }
    const std::string checksum = listed[i]->child_text("ChecksumCRC32C");
    if (!checksum.empty() && checksum != crc32c_to_base64(part->second.crc32c)) {
      return s3_error_reply(400, "InvalidPart",
                            absl::StrCat("The checksum of part ", previous, " did not match."));
    }
    if (i + 1 < listed.size() && part->second.data.size() < kMinPartSize) {
      return s3_error_reply(400, "EntityTooSmall",
                            "Your proposed upload is smaller than the minimum allowed size");
    }
    if (data.size() + part->second.data.size() > max_object_bytes_) {
      return s3_error_reply(400, "EntityTooLarge",
                            "Your proposed upload exceeds the maximum size.");
    }
    data += part->second.data;
    std::string raw;
    absl::HexStringToBytes(part->second.md5_hex).swap(raw);
    md5s += raw;
  }
  const std::string etag = absl::StrCat("\"", df::md5_hex_of(md5s), "-", listed.size(), "\"");
  NewObject meta;
  meta.content_type = upload.content_type.empty() ? "binary/octet-stream" : upload.content_type;
  meta.metadata[kEtagKey] = etag;
  std::string composite;
  const std::string sent_type = req.get_header_value("x-amz-checksum-type");
  if (!sent_type.empty() && sent_type != (upload.full_object ? "FULL_OBJECT" : "COMPOSITE")) {
    return s3_error_reply(400, "InvalidRequest",
                          "The x-amz-checksum-type does not match the one the upload was "
                          "created with.");
  }
  if (upload.full_object) {
    // As S3 does for FULL_OBJECT: the CRC32C of the whole object, checked against the
    // caller's before the object exists.
    composite = crc32c_to_base64(crc32c(data));
    if (req.has_header("x-amz-checksum-crc32c") &&
        req.get_header_value("x-amz-checksum-crc32c") != composite) {
      return s3_error_reply(400, "BadDigest",
                            "The CRC32C you specified did not match the calculated checksum.");
    }
    meta.metadata[kChecksumKey] = composite;
  } else if (upload.crc32c_algorithm) {
    // S3's composite checksum: the CRC32C of the parts' big-endian CRC32Cs, then "-N".
    std::string be;
    for (const df::XmlElement* p : listed) {
      auto part = upload.parts.find(static_cast<int>(*parse_u64(p->child_text("PartNumber"))));
      const std::uint32_t c = part->second.crc32c;
      be += static_cast<char>(c >> 24);
      be += static_cast<char>(c >> 16);
      be += static_cast<char>(c >> 8);
      be += static_cast<char>(c);
    }
    composite = absl::StrCat(crc32c_to_base64(crc32c(be)), "-", listed.size());
    meta.metadata[kChecksumKey] = composite;
  }
  Preconditions pre;
  if (req.get_header_value("If-None-Match") == "*") pre.if_generation_match = 0;
  auto object = store_->insert(route.bucket, route.key, std::move(data), meta, pre);
  if (!object.ok()) return store_error(object.status(), route);
  {
    std::lock_guard<std::mutex> lock(mu_);
    uploads_.erase(id);
  }
  std::string body =
      absl::StrCat("<CompleteMultipartUploadResult", kNamespace, "><Location>/", x(route.bucket),
                   "/", x(route.key), "</Location><Bucket>", x(route.bucket), "</Bucket><Key>",
                   x(route.key), "</Key><ETag>", x(etag), "</ETag>");
  if (!composite.empty()) {
    absl::StrAppend(&body, "<ChecksumCRC32C>", composite, "</ChecksumCRC32C><ChecksumType>",
                    upload.full_object ? "FULL_OBJECT" : "COMPOSITE", "</ChecksumType>");
  }
  absl::StrAppend(&body, "</CompleteMultipartUploadResult>");
  return xml_reply(200, std::move(body));
}

Reply S3Service::abort_multipart(const S3Route& route, const httplib::Request& req) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = uploads_.find(req.get_param_value("uploadId"));
  if (it == uploads_.end() || it->second.bucket != route.bucket || it->second.key != route.key) {
    return s3_error_reply(404, "NoSuchUpload", "The specified upload does not exist.");
  }
  uploads_.erase(it);
  Reply r;
  r.status = 204;
  return r;
}

// ListMultipartUploads, as S3 answers it: uploads under `prefix` in key order (then by when
// they started), at most max-uploads (1000) a page, resumed from key-marker/upload-id-marker.
Reply S3Service::list_multipart_uploads(const S3Route& route, const httplib::Request& req) {
  if (!store_->get_bucket(route.bucket).ok()) return store_error(absl::NotFoundError(""), route);
  const std::string prefix = req.get_param_value("prefix");
  const std::string key_marker = req.get_param_value("key-marker");
  const std::string id_marker = req.get_param_value("upload-id-marker");
  std::size_t max_uploads = 1000;
  if (req.has_param("max-uploads")) {
    auto n = parse_u64(req.get_param_value("max-uploads"));
    if (!n) return s3_error_reply(400, "InvalidArgument", "max-uploads must be a number");
    max_uploads = static_cast<std::size_t>(std::min<std::uint64_t>(*n, 1000));
  }
  struct Entry {
    std::string key, id;
    std::int64_t initiated_us;
  };
  std::vector<Entry> found;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, u] : uploads_) {
      if (u.bucket != route.bucket || u.key.compare(0, prefix.size(), prefix) != 0) continue;
      found.push_back({u.key, id, u.initiated_us});
    }
  }
  std::sort(found.begin(), found.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.key, a.initiated_us, a.id) < std::tie(b.key, b.initiated_us, b.id);
  });
  std::string body = absl::StrCat("<ListMultipartUploadsResult", kNamespace, "><Bucket>",
                                  x(route.bucket), "</Bucket><Prefix>", x(prefix), "</Prefix>");
  std::size_t listed = 0;
  bool truncated = false;
  std::string next_key, next_id;
  for (const Entry& e : found) {
    if (!key_marker.empty() &&
        (e.key < key_marker || (e.key == key_marker && (id_marker.empty() || e.id <= id_marker)))) {
      continue;
    }
    if (listed == max_uploads) {
      truncated = true;
      break;
    }
    absl::StrAppend(&body, "<Upload><Key>", x(e.key), "</Key><UploadId>", x(e.id),
                    "</UploadId><Initiated>", iso8601(e.initiated_us),
                    "</Initiated><StorageClass>STANDARD</StorageClass></Upload>");
    next_key = e.key;
    next_id = e.id;
    ++listed;
  }
  absl::StrAppend(&body, "<IsTruncated>", truncated ? "true" : "false", "</IsTruncated>");
  if (truncated) {
    absl::StrAppend(&body, "<NextKeyMarker>", x(next_key), "</NextKeyMarker><NextUploadIdMarker>",
                    x(next_id), "</NextUploadIdMarker>");
  }
  absl::StrAppend(&body, "</ListMultipartUploadsResult>");
  return xml_reply(200, std::move(body));
}

}  // namespace dataflux::emulator::internal
