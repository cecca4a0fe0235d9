#include "emulator/routes.h"

#include <rapidjson/document.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dataflux/crc32c.h"
#include "emulator/resources.h"
#include "emulator/wire.h"

namespace dataflux::emulator::internal {
namespace {

constexpr char kOctetStream[] = "application/octet-stream";

// Object resource fields a request body may carry (upload metadata, patch, compose dest).
struct MetadataJson {
  std::optional<std::string> name;
  std::optional<std::string> content_type;
  std::optional<std::string> content_encoding;
  std::map<std::string, std::optional<std::string>> metadata;  // null value: delete the key
  std::optional<std::string> crc32c;
  std::optional<std::string> md5;
};

absl::StatusOr<MetadataJson> parse_metadata(const rapidjson::Value& v) {
  if (!v.IsObject()) return absl::InvalidArgumentError("Object metadata must be a JSON object");
  MetadataJson out;
  auto string_field = [&](const char* key, std::optional<std::string>* dst) -> absl::Status {
    auto it = v.FindMember(key);
    if (it == v.MemberEnd() || it->value.IsNull()) return absl::OkStatus();
    if (!it->value.IsString()) return absl::InvalidArgumentError(absl::StrCat(key, ": string"));
    *dst = std::string(it->value.GetString(), it->value.GetStringLength());
    return absl::OkStatus();
  };
  for (auto [key, dst] : {std::pair{"name", &out.name},
                          {"contentType", &out.content_type},
                          {"contentEncoding", &out.content_encoding},
                          {"crc32c", &out.crc32c},
                          {"md5Hash", &out.md5}}) {
    if (auto s = string_field(key, dst); !s.ok()) return s;
  }
  auto md = v.FindMember("metadata");
  if (md != v.MemberEnd() && !md->value.IsNull()) {
    if (!md->value.IsObject()) return absl::InvalidArgumentError("metadata: object");
    for (const auto& m : md->value.GetObject()) {
      std::string key(m.name.GetString(), m.name.GetStringLength());
      if (m.value.IsNull()) {
        out.metadata[key] = std::nullopt;
      } else if (m.value.IsString()) {
        out.metadata[key] = std::string(m.value.GetString(), m.value.GetStringLength());
      } else {
        return absl::InvalidArgumentError("metadata values must be strings");
      }
    }
  }
  return out;
}

absl::StatusOr<rapidjson::Document> parse_json(std::string_view body) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError()) return absl::InvalidArgumentError("Malformed JSON body");
  return doc;
}

// Empty body = no metadata.
absl::StatusOr<MetadataJson> parse_metadata_body(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return MetadataJson{};
  auto doc = parse_json(body);
  if (!doc.ok()) return doc.status();
  return parse_metadata(*doc);
}

absl::StatusOr<NewObject> to_new_object(const MetadataJson& m, std::string content_type) {
  NewObject out;
  out.content_type = m.content_type.value_or(content_type.empty() ? kOctetStream : content_type);
  out.content_encoding = m.content_encoding.value_or("");
  for (const auto& [key, value] : m.metadata) {
    if (value) out.metadata[key] = *value;
  }
  if (m.crc32c) {
    out.expected_crc32c = crc32c_from_base64(*m.crc32c);
    if (!out.expected_crc32c) return absl::InvalidArgumentError("Malformed crc32c");
  }
  if (m.md5) out.expected_md5_base64 = *m.md5;
  return out;
}

absl::StatusOr<std::optional<std::int64_t>> int_param(const httplib::Request& req,
                                                      const char* key) {
  if (!req.has_param(key)) return std::optional<std::int64_t>();
  auto value = parse_i64(req.get_param_value(key));
  if (!value) return absl::InvalidArgumentError(absl::StrCat("Invalid value for ", key));
  return std::optional<std::int64_t>(*value);
}

// ifGenerationMatch & co, or with `source` ifSourceGenerationMatch & co.
absl::StatusOr<Preconditions> preconditions(const httplib::Request& req, bool source = false) {
  Preconditions pre;
  const char* names[4] = {"ifGenerationMatch", "ifGenerationNotMatch", "ifMetagenerationMatch",
                          "ifMetagenerationNotMatch"};
  const char* source_names[4] = {"ifSourceGenerationMatch", "ifSourceGenerationNotMatch",
                                 "ifSourceMetagenerationMatch", "ifSourceMetagenerationNotMatch"};
  std::optional<std::int64_t>* fields[4] = {&pre.if_generation_match, &pre.if_generation_not_match,
                                            &pre.if_metageneration_match,
                                            &pre.if_metageneration_not_match};
  for (int i = 0; i < 4; ++i) {
    auto value = int_param(req, source ? source_names[i] : names[i]);
    if (!value.ok()) return value.status();
    *fields[i] = *value;
  }
  return pre;
}

std::string header(const httplib::Request& req, const char* key) {
  return req.has_header(key) ? req.get_header_value(key) : std::string();
}

Reply json_reply(std::string body, int status = 200) {
  Reply reply;
  reply.status = status;
  reply.body = std::move(body);
  return reply;
}

std::string join_name(const std::vector<std::string>& segments, std::size_t begin,
                      std::size_t end) {
  return absl::StrJoin(segments.begin() + static_cast<std::ptrdiff_t>(begin),
                       segments.begin() + static_cast<std::ptrdiff_t>(end), "/");
}

Route make_route(RouteKind kind, const char* operation, std::string bucket = {},
                 std::string object = {}) {
  Route r;
  r.kind = kind;
  r.operation = operation;
  r.bucket = std::move(bucket);
  r.object = std::move(object);
  return r;
}

}  // namespace

bool apply_range_fault(const Fault& fault, Reply* reply) {
  using Kind = Fault::Kind;
  if (fault.kind != Kind::kIgnoreRange && fault.kind != Kind::kShiftRange &&
      fault.kind != Kind::kLongRange) {
    return false;
  }
  if (!reply->blob || reply->status != 206 || reply->length == 0) return false;
  const std::uint64_t size = reply->blob->size();
  std::uint64_t first = reply->offset;
  std::uint64_t last = reply->offset + reply->length - 1;
  auto& headers = reply->headers;
  headers.erase(std::remove_if(
                    headers.begin(), headers.end(),
                    [](const auto& h) { return absl::EqualsIgnoreCase(h.first, "Content-Range"); }),
                headers.end());
  if (fault.kind == Kind::kIgnoreRange) {
    reply->status = 200;
    reply->offset = 0;
    reply->length = size;
    return true;
  }
  if (fault.kind == Kind::kShiftRange) {
    first = first >= fault.after_bytes ? first - fault.after_bytes
                                       : std::min(first + fault.after_bytes, last);
  } else {
    last = std::min(size - 1, last + fault.after_bytes);
  }
  reply->offset = first;
  reply->length = last - first + 1;
  headers.emplace_back("Content-Range", absl::StrCat("bytes ", first, "-", last, "/", size));
  return true;
}

Reply error_reply(int http_status, const std::string& message) {
  return json_reply(error_json(http_status, message), http_status);
}

Reply status_reply(const absl::Status& status) {
  return error_reply(http_status_for(status), std::string(status.message()));
}

std::optional<Route> resolve_route(const httplib::Request& req,
                                   const std::vector<std::string>& segments) {
  // apitools (gcloud) starts resumable uploads at /resumable/upload/storage/v1/...
  const bool resumable_prefix =
      segments.size() > 1 && segments[0] == "resumable" && segments[1] == "upload";
  const std::vector<std::string> s(segments.begin() + (resumable_prefix ? 1 : 0), segments.end());
  const std::string m = req.method == "HEAD" ? std::string("GET") : req.method;
  Route r;
  const std::size_t n = s.size();
  auto is = [&](std::size_t i, const char* v) { return i < n && s[i] == v; };
  if (is(0, "storage") && is(1, "v1") && is(2, "b")) {
    if (n == 3) {
      if (m == "GET") return make_route(RouteKind::kBucketList, "buckets.list");
      if (m == "POST") return make_route(RouteKind::kBucketInsert, "buckets.insert");
      return std::nullopt;
    }
    r.bucket = s[3];
    if (n == 4) {
      r.kind = m == "GET" ? RouteKind::kBucketGet : RouteKind::kBucketDelete;
      r.operation = m == "GET" ? "buckets.get" : "buckets.delete";
      if (m == "GET" || m == "DELETE") return r;
      return std::nullopt;
    }
    // buckets.getStorageLayout (gcloud asks before a recursive copy) and
    // buckets.testIamPermissions (clients ask before they compose).
    if (n == 5 && is(4, "storageLayout")) {
      if (m != "GET") return std::nullopt;
      return make_route(RouteKind::kBucketStorageLayout, "buckets.getStorageLayout", r.bucket);
    }
    if (n == 6 && is(4, "iam") && is(5, "testPermissions")) {
      if (m != "GET") return std::nullopt;
      return make_route(RouteKind::kBucketTestIamPermissions, "buckets.testIamPermissions",
                        r.bucket);
    }
    if (!is(4, "o")) return std::nullopt;
    if (n == 5) {
      if (m != "GET") return std::nullopt;
      r.kind = RouteKind::kObjectList;
      r.operation = "objects.list";
      return r;
    }
    if (m == "POST") {
      if (s[n - 1] == "compose" && n >= 7) {
        r.kind = RouteKind::kObjectCompose;
        r.operation = "objects.compose";
        r.object = join_name(s, 5, n - 1);
        return r;
      }
      // .../o/SRC/copyTo/b/DB/o/DST, where SRC and DST may span segments if sent unescaped.
      for (std::size_t i = 6; i + 3 < n; ++i) {
        if ((s[i] == "copyTo" || s[i] == "rewriteTo") && s[i + 1] == "b" && s[i + 3] == "o") {
          const bool rewrite = s[i] == "rewriteTo";
          r.kind = rewrite ? RouteKind::kObjectRewrite : RouteKind::kObjectCopy;
          r.operation = rewrite ? "objects.rewrite" : "objects.copy";
          r.object = join_name(s, 5, i);
          r.dst_bucket = s[i + 2];
          r.dst_object = join_name(s, i + 4, n);
          if (r.dst_object.empty()) return std::nullopt;
          return r;
        }
      }
      return std::nullopt;
    }
    r.object = join_name(s, 5, n);
    if (m == "GET") {
      const bool media = req.get_param_value("alt") == "media";
      r.kind = media ? RouteKind::kObjectMedia : RouteKind::kObjectGet;
      r.operation = media ? "objects.media" : "objects.get";
      return r;
    }
    if (m == "DELETE")
      return make_route(RouteKind::kObjectDelete, "objects.delete", r.bucket, r.object);
    if (m == "PATCH" || m == "PUT") {
      return make_route(RouteKind::kObjectPatch, "objects.patch", r.bucket, r.object);
    }
    return std::nullopt;
  }
  if (is(0, "download") && is(1, "storage") && is(2, "v1") && is(3, "b") && is(5, "o") && n > 6 &&
      m == "GET") {
    return make_route(RouteKind::kObjectMedia, "objects.media", s[4], join_name(s, 6, n));
  }
  if (is(0, "upload") && is(1, "storage") && is(2, "v1") && is(3, "b") && is(5, "o") && n == 6) {
    r.bucket = s[4];
    r.operation = "objects.upload";
    if (req.has_param("upload_id")) {
      if (m == "PUT" || m == "POST")
        r.kind = RouteKind::kUploadChunk;
      else if (m == "DELETE")
        r.kind = RouteKind::kUploadCancel;
      else
        return std::nullopt;
      return r;
    }
    if (m != "POST") return std::nullopt;
    r.kind = RouteKind::kUploadStart;
    r.operation = "objects.insert";
    return r;
  }
  return std::nullopt;
}

Reply ObjectService::execute(const Route& route, const httplib::Request& req) {
  // A bad selector is refused before anything changes, as GCS does.
  auto parsed = FieldMask::parse(req.get_param_value("fields"));
  if (!parsed.ok()) return status_reply(parsed.status());
  const FieldMask& fields = *parsed;
  switch (route.kind) {
    case RouteKind::kBucketList:
      return json_reply(
          bucket_list_json(store_->list_buckets(req.get_param_value("project")), endpoint_));
    case RouteKind::kBucketInsert:
      return bucket_insert(req);
    case RouteKind::kBucketGet: {
      auto bucket = store_->get_bucket(route.bucket);
      if (!bucket.ok()) return status_reply(bucket.status());
      return json_reply(bucket_json(*bucket, endpoint_));
    }
    case RouteKind::kBucketDelete: {
      if (auto s = store_->delete_bucket(route.bucket); !s.ok()) return status_reply(s);
      return json_reply("", 204);
    }
    case RouteKind::kBucketStorageLayout: {
      auto bucket = store_->get_bucket(route.bucket);
      if (!bucket.ok()) return status_reply(bucket.status());
      return json_reply(storage_layout_json(*bucket));
    }
    case RouteKind::kBucketTestIamPermissions: {
      auto bucket = store_->get_bucket(route.bucket);
      if (!bucket.ok()) return status_reply(bucket.status());
      // The emulator grants everything: each permission asked about is held. GCS answers 400
      // for a request naming none (the parameter is required).
      std::vector<std::string> asked;
      const std::size_t count = req.get_param_value_count("permissions");
      for (std::size_t i = 0; i < count; ++i) {
        asked.push_back(req.get_param_value("permissions", i));
      }
      if (asked.empty()) {
        return error_reply(400, "Required parameter: permissions");
      }
      return json_reply(test_permissions_json(asked));
    }
    case RouteKind::kObjectList:
      return object_list(route, req, fields);
    case RouteKind::kObjectGet:
      return object_get(route, req, false, fields);
    case RouteKind::kObjectMedia:
      return object_get(route, req, true, fields);
    case RouteKind::kObjectDelete:
      return object_delete(route, req);
    case RouteKind::kObjectPatch:
      return object_patch(route, req, fields);
    case RouteKind::kObjectCompose:
      return object_compose(route, req, fields);
    case RouteKind::kObjectCopy:
      return object_copy(route, req, false, fields);
    case RouteKind::kObjectRewrite:
      return object_copy(route, req, true, fields);
    case RouteKind::kUploadStart:
      return upload_start(route, req, fields);
    case RouteKind::kUploadChunk:
      return upload_chunk(req, fields);
    case RouteKind::kUploadCancel: {
      if (auto s = uploads_->cancel(req.get_param_value("upload_id")); !s.ok()) {
        return status_reply(s);
      }
      return error_reply(499, "Upload cancelled by the client");
    }
  }
  return error_reply(500, "Unhandled route");
}

Reply ObjectService::object_reply(const ObjectRecord& object, const FieldMask& fields) const {
  return json_reply(object_json(object, endpoint_, fields));
}

Reply ObjectService::bucket_insert(const httplib::Request& req) {
  auto doc = parse_json(req.body);
  if (!doc.ok()) return status_reply(doc.status());
  if (!doc->IsObject() || !doc->HasMember("name") || !(*doc)["name"].IsString()) {
    return error_reply(400, "A bucket insert needs a JSON body with a \"name\"");
  }
  const std::string name = (*doc)["name"].GetString();
  if (auto s = store_->create_bucket(name, req.get_param_value("project")); !s.ok()) {
    return status_reply(s);
  }
  return json_reply(bucket_json(*store_->get_bucket(name), endpoint_));
}

Reply ObjectService::object_list(const Route& route, const httplib::Request& req,
                                 const FieldMask& fields) {
  ListQuery q;
  q.prefix = req.get_param_value("prefix");
  q.delimiter = req.get_param_value("delimiter");
  q.start_offset = req.get_param_value("startOffset");
  q.end_offset = req.get_param_value("endOffset");
  q.page_token = req.get_param_value("pageToken");
  q.include_trailing_delimiter = req.get_param_value("includeTrailingDelimiter") == "true";
  if (req.has_param("maxResults")) {
    auto max = parse_u64(req.get_param_value("maxResults"));
    if (!max || *max == 0) return error_reply(400, "Invalid value for maxResults");
    q.max_results = static_cast<std::size_t>(std::min<std::uint64_t>(*max, 1000));
  }
  auto page = store_->list(route.bucket, q);
  if (!page.ok()) return status_reply(page.status());
  return json_reply(object_list_json(*page, endpoint_, fields));
}

Reply ObjectService::object_get(const Route& route, const httplib::Request& req, bool media,
                                const FieldMask& fields) {
  auto generation = int_param(req, "generation");
  if (!generation.ok()) return status_reply(generation.status());
  auto pre = preconditions(req);
  if (!pre.ok()) return status_reply(pre.status());
  auto object = store_->get(route.bucket, route.object, *generation);
  if (!object.ok()) return status_reply(object.status());
  // On reads GCS answers a failed *NotMatch with 304 Not Modified, the others with 412.
  Preconditions match_only = *pre;
  match_only.if_generation_not_match.reset();
  match_only.if_metageneration_not_match.reset();
  if (auto s = check_preconditions(&*object, match_only); !s.ok()) return status_reply(s);
  Preconditions not_match_only;
  not_match_only.if_generation_not_match = pre->if_generation_not_match;
  not_match_only.if_metageneration_not_match = pre->if_metageneration_not_match;
  if (!check_preconditions(&*object, not_match_only).ok()) {
    Reply reply;
    reply.status = 304;
    return reply;
  }
  if (!media) return object_reply(*object, fields);

  Reply reply;
  const std::uint64_t size = object->size();
  std::string hash = absl::StrCat("crc32c=", crc32c_to_base64(object->crc32c));
  if (!object->md5_base64.empty()) absl::StrAppend(&hash, ",md5=", object->md5_base64);
  const bool gzip_stored = absl::EqualsIgnoreCase(object->content_encoding, "gzip");
  reply.headers = {{"x-goog-hash", hash},
                   {"x-goog-generation", std::to_string(object->generation)},
                   {"x-goog-metageneration", std::to_string(object->metageneration)},
                   {"x-goog-stored-content-length", std::to_string(size)},
                   {"x-goog-stored-content-encoding", gzip_stored ? "gzip" : "identity"},
                   {"ETag", absl::StrCat("\"", object->generation, "\"")}};
  reply.content_type = object->content_type;
  if (gzip_stored && !accepts_gzip(header(req, "Accept-Encoding"))) {
    // Decompressive transcoding, as GCS documents it: the object is served decompressed, Range
    // is ignored (200, the whole object), and neither Content-Length nor Content-Encoding is
    // sent; x-goog-hash still describes the stored, compressed bytes.
    std::string stored(size, '\0');
    if (size > 0 && !object->blob->read(0, size, stored.data())) {
      return error_reply(500, "Could not read the object's data");
    }
    if (auto plain = gunzip(stored)) {
      reply.body = *std::move(plain);
      reply.chunked = true;
      return reply;
    }
    // Not valid gzip after all: served as stored, like any other object.
  }
  if (gzip_stored) reply.headers.emplace_back("Content-Encoding", "gzip");
  reply.headers.emplace_back("Accept-Ranges", "bytes");
  ByteRange range;
  switch (parse_range(header(req, "Range"), size, &range)) {
    case RangeResult::kMalformed:
    case RangeResult::kUnsatisfiable: {
      Reply bad = error_reply(416, absl::StrCat("The requested range cannot be satisfied: ",
                                                header(req, "Range"), " of ", size, " bytes"));
      bad.headers.emplace_back("Content-Range", absl::StrCat("bytes */", size));
      return bad;
    }
    case RangeResult::kNone:
      range.first = 0;
      range.last = size == 0 ? 0 : size - 1;
      break;
    case RangeResult::kOk:
      reply.status = 206;
      reply.headers.emplace_back("Content-Range",
                                 absl::StrCat("bytes ", range.first, "-", range.last, "/", size));
      break;
  }
  reply.blob = object->blob;
  reply.offset = range.first;
  reply.length = size == 0 ? 0 : range.last - range.first + 1;
  return reply;
}

Reply ObjectService::object_delete(const Route& route, const httplib::Request& req) {
  auto generation = int_param(req, "generation");
  if (!generation.ok()) return status_reply(generation.status());
  auto pre = preconditions(req);
  if (!pre.ok()) return status_reply(pre.status());
  if (auto s = store_->remove(route.bucket, route.object, *generation, *pre); !s.ok()) {
    return status_reply(s);
  }
  return json_reply("", 204);
}

Reply ObjectService::object_patch(const Route& route, const httplib::Request& req,
                                  const FieldMask& fields) {
  auto pre = preconditions(req);
  if (!pre.ok()) return status_reply(pre.status());
  auto meta = parse_metadata_body(req.body);
  if (!meta.ok()) return status_reply(meta.status());
  auto object = store_->patch(route.bucket, route.object, meta->content_type, meta->metadata, *pre);
  if (!object.ok()) return status_reply(object.status());
  return object_reply(*object, fields);
}

Reply ObjectService::object_compose(const Route& route, const httplib::Request& req,
                                    const FieldMask& fields) {
  auto pre = preconditions(req);
  if (!pre.ok()) return status_reply(pre.status());
  auto doc = parse_json(req.body);
  if (!doc.ok()) return status_reply(doc.status());
  if (!doc->IsObject() || !doc->HasMember("sourceObjects") || !(*doc)["sourceObjects"].IsArray()) {
    return error_reply(400, "compose needs \"sourceObjects\"");
  }
  auto generation_of = [](const rapidjson::Value& v) -> std::optional<std::int64_t> {
    if (v.IsInt64()) return v.GetInt64();
    if (v.IsString()) return parse_i64(v.GetString());
    return std::nullopt;
  };
  std::vector<ComposeSource> sources;
  for (const auto& item : (*doc)["sourceObjects"].GetArray()) {
    if (!item.IsObject() || !item.HasMember("name") || !item["name"].IsString()) {
      return error_reply(400, "Each source object needs a \"name\"");
    }
    ComposeSource source;
    source.name = item["name"].GetString();
    // A JSON null is an absent member, as GCS reads it: Google's Python client sends
    // "generation": null for a source named without one.
    auto generation = item.FindMember("generation");
    if (generation != item.MemberEnd() && !generation->value.IsNull()) {
      source.generation = generation_of(generation->value);
      if (!source.generation) return error_reply(400, "Invalid source generation");
    }
    auto op = item.FindMember("objectPreconditions");
    if (op != item.MemberEnd() && op->value.IsObject()) {
      auto match = op->value.FindMember("ifGenerationMatch");
      if (match != op->value.MemberEnd() && !match->value.IsNull()) {
        source.if_generation_match = generation_of(match->value);
        if (!source.if_generation_match) return error_reply(400, "Invalid ifGenerationMatch");
      }
    }
    sources.push_back(std::move(source));
  }
  MetadataJson dest;
  if (doc->HasMember("destination")) {
    auto parsed = parse_metadata((*doc)["destination"]);
    if (!parsed.ok()) return status_reply(parsed.status());
    dest = *std::move(parsed);
  }
  auto meta = to_new_object(dest, kOctetStream);
  if (!meta.ok()) return status_reply(meta.status());
  meta->expected_crc32c.reset();  // GCS ignores hashes given for a composite
  meta->expected_md5_base64.clear();
  auto object = store_->compose(route.bucket, route.object, sources, *meta, *pre);
  if (!object.ok()) return status_reply(object.status());
  return object_reply(*object, fields);
}

Reply ObjectService::object_copy(const Route& route, const httplib::Request& req, bool rewrite,
                                 const FieldMask& fields) {
  auto source_generation = int_param(req, "sourceGeneration");
  if (!source_generation.ok()) return status_reply(source_generation.status());
  auto pre = preconditions(req);
  if (!pre.ok()) return status_reply(pre.status());
  auto source_pre = preconditions(req, /*source=*/true);
  if (!source_pre.ok()) return status_reply(source_pre.status());
  auto source = store_->get(route.bucket, route.object, *source_generation);
  if (!source.ok()) return status_reply(source.status());
  if (auto s = check_preconditions(&*source, *source_pre); !s.ok()) return status_reply(s);
  auto meta_json = parse_metadata_body(req.body);
  if (!meta_json.ok()) return status_reply(meta_json.status());
  std::optional<NewObject> meta;
  if (meta_json->content_type || !meta_json->metadata.empty()) {
    auto converted = to_new_object(*meta_json, source->content_type);
    if (!converted.ok()) return status_reply(converted.status());
    if (!meta_json->content_encoding) converted->content_encoding = source->content_encoding;
    meta = *std::move(converted);
  }
  auto object = store_->copy(route.bucket, route.object, source->generation, route.dst_bucket,
                             route.dst_object, meta, *pre);
  if (!object.ok()) return status_reply(object.status());
  if (!rewrite) return object_reply(*object, fields);
  return json_reply(rewrite_json(*object, endpoint_));
}

Reply ObjectService::upload_start(const Route& route, const httplib::Request& req,
                                  const FieldMask& fields) {
  const std::string type = req.get_param_value("uploadType");
  auto pre = preconditions(req);
  if (!pre.ok()) return status_reply(pre.status());
  MetadataJson meta_json;
  std::string_view data;
  std::string content_type = header(req, "Content-Type");
  if (type == "media") {
    data = req.body;
  } else if (type == "multipart") {
    auto boundary = multipart_boundary(content_type);
    if (!boundary) return error_reply(400, "multipart upload without a boundary");
    auto parts = parse_multipart(req.body, *boundary);
    if (!parts || parts->size() != 2) {
      return error_reply(400, "Malformed multipart body: want metadata and media parts");
    }
    auto parsed = parse_metadata_body((*parts)[0].body);
    if (!parsed.ok()) return status_reply(parsed.status());
    meta_json = *std::move(parsed);
    content_type = (*parts)[1].content_type;
    data = (*parts)[1].body;
  } else if (type == "resumable") {
    auto parsed = parse_metadata_body(req.body);
    if (!parsed.ok()) return status_reply(parsed.status());
    meta_json = *std::move(parsed);
    content_type = header(req, "X-Upload-Content-Type");
    auto announced = parse_u64(header(req, "X-Upload-Content-Length"));
    if (announced && *announced > max_object_bytes_) {
      return error_reply(413, "Upload exceeds the maximum object size");
    }
  } else {
    return error_reply(400, absl::StrCat("Unsupported uploadType '", type, "'"));
  }
  const std::string name =
      req.has_param("name") ? req.get_param_value("name") : meta_json.name.value_or("");
  if (name.empty()) return error_reply(400, "Upload without an object name");
  if (req.has_param("contentEncoding"))
    meta_json.content_encoding = req.get_param_value("contentEncoding");
  auto meta = to_new_object(meta_json, content_type);
  if (!meta.ok()) return status_reply(meta.status());
  if (type == "resumable") {
    std::string id = uploads_->start(UploadTarget{route.bucket, name, *meta, *pre});
    Reply reply = json_reply("");
    reply.headers.emplace_back(
        "Location", absl::StrCat(endpoint_, "/upload/storage/v1/b/", percent_encode(route.bucket),
                                 "/o?uploadType=resumable&upload_id=", id));
    return reply;
  }
  if (data.size() > max_object_bytes_) {
    return error_reply(413, "Upload exceeds the maximum object size");
  }
  GoogHash hash = parse_goog_hash(header(req, "x-goog-hash"));
  if (!hash.crc32c.empty() && !meta->expected_crc32c) {
    meta->expected_crc32c = crc32c_from_base64(hash.crc32c);
    if (!meta->expected_crc32c) return error_reply(400, "Malformed crc32c in x-goog-hash");
  }
  if (!hash.md5.empty() && meta->expected_md5_base64.empty()) meta->expected_md5_base64 = hash.md5;
  // A media upload's body is the object: move it instead of copying (hundreds of MiB in the
  // benchmarks). httplib's Request is its own non-const local, so the cast is sound.
  std::string bytes =
      type == "media" ? std::move(const_cast<std::string&>(req.body)) : std::string(data);
  auto object = store_->insert(route.bucket, name, std::move(bytes), *meta, *pre);
  if (!object.ok()) return status_reply(object.status());
  return object_reply(*object, fields);
}

Reply ObjectService::upload_chunk(const httplib::Request& req, const FieldMask& fields) {
  auto outcome = uploads_->put(req.get_param_value("upload_id"), header(req, "Content-Range"),
                               req.body, header(req, "x-goog-hash"));
  if (!outcome.ok()) return status_reply(outcome.status());
  if (outcome->complete) return object_reply(*outcome->object, fields);
  Reply reply = json_reply("", 308);
  if (outcome->persisted > 0) {
    reply.headers.emplace_back("Range", absl::StrCat("bytes=0-", outcome->persisted - 1));
  }
  return reply;
}

}  // namespace dataflux::emulator::internal
