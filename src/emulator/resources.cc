#include "emulator/resources.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "dataflux/crc32c.h"
#include "emulator/wire.h"

namespace dataflux::emulator::internal {
namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

constexpr char kLocation[] = "US";
constexpr char kLocationType[] = "multi-region";

void field(JsonWriter& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value);
}

void write_object(JsonWriter& w, const ObjectRecord& o, const std::string& endpoint,
                  const FieldMask& m) {
  // Strings are built only for members the reply keeps: a listing of 1,000 objects asks for few.
  const std::string generation = std::to_string(o.generation);
  auto encoded = [&] { return percent_encode(o.name); };
  w.StartObject();
  if (m.keeps("kind")) field(w, "kind", "storage#object");
  if (m.keeps("id")) field(w, "id", absl::StrCat(o.bucket, "/", o.name, "/", generation));
  if (m.keeps("selfLink")) {
    field(w, "selfLink", absl::StrCat(endpoint, "/storage/v1/b/", o.bucket, "/o/", encoded()));
  }
  if (m.keeps("mediaLink")) {
    field(w, "mediaLink",
          absl::StrCat(endpoint, "/download/storage/v1/b/", o.bucket, "/o/", encoded(),
                       "?generation=", generation, "&alt=media"));
  }
  if (m.keeps("name")) field(w, "name", o.name);
  if (m.keeps("bucket")) field(w, "bucket", o.bucket);
  if (m.keeps("generation")) field(w, "generation", generation);
  if (m.keeps("metageneration")) field(w, "metageneration", std::to_string(o.metageneration));
  if (m.keeps("contentType")) field(w, "contentType", o.content_type);
  if (!o.content_encoding.empty() && m.keeps("contentEncoding")) {
    field(w, "contentEncoding", o.content_encoding);
  }
  if (m.keeps("storageClass")) field(w, "storageClass", "STANDARD");
  if (m.keeps("size")) field(w, "size", std::to_string(o.size()));
  if (!o.md5_base64.empty() && m.keeps("md5Hash")) field(w, "md5Hash", o.md5_base64);
  if (m.keeps("crc32c")) field(w, "crc32c", crc32c_to_base64(o.crc32c));
  if (m.keeps("etag")) {
    field(w, "etag", absl::Base64Escape(absl::StrCat(generation, "/", o.metageneration)));
  }
  if (m.keeps("timeCreated")) field(w, "timeCreated", rfc3339(o.created_us));
  if (m.keeps("updated")) field(w, "updated", rfc3339(o.updated_us));
  if (m.keeps("timeStorageClassUpdated")) {
    field(w, "timeStorageClassUpdated", rfc3339(o.created_us));
  }
  if (o.component_count > 0 && m.keeps("componentCount")) {
    w.Key("componentCount");
    w.Int(o.component_count);
  }
  if (!o.metadata.empty() && m.keeps("metadata")) {
    const FieldMask& keys = m.inside("metadata");
    w.Key("metadata");
    w.StartObject();
    for (const auto& [key, value] : o.metadata) {
      if (!keys.keeps(key)) continue;
      w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
      w.String(value);
    }
    w.EndObject();
  }
  w.EndObject();
}

void write_bucket(JsonWriter& w, const BucketRecord& b, const std::string& endpoint) {
  w.StartObject();
  field(w, "kind", "storage#bucket");
  field(w, "id", b.name);
  field(w, "selfLink", absl::StrCat(endpoint, "/storage/v1/b/", b.name));
  field(w, "name", b.name);
  field(w, "projectNumber", "123456789");
  field(w, "metageneration", "1");
  field(w, "location", kLocation);
  field(w, "locationType", kLocationType);
  field(w, "storageClass", "STANDARD");
  field(w, "etag", "CAE=");
  field(w, "timeCreated", rfc3339(b.created_us));
  field(w, "updated", rfc3339(b.created_us));
  w.EndObject();
}

std::string finish(const rapidjson::StringBuffer& buffer) {
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace

std::string object_json(const ObjectRecord& object, const std::string& endpoint,
                        const FieldMask& fields) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  write_object(w, object, endpoint, fields);
  return finish(buffer);
}

std::string bucket_json(const BucketRecord& bucket, const std::string& endpoint) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  write_bucket(w, bucket, endpoint);
  return finish(buffer);
}

std::string storage_layout_json(const BucketRecord& bucket) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  field(w, "kind", "storage#storageLayout");
  field(w, "bucket", bucket.name);
  field(w, "location", kLocation);
  field(w, "locationType", kLocationType);
  w.Key("hierarchicalNamespace");
  w.StartObject();
  w.Key("enabled");
  w.Bool(false);
  w.EndObject();
  w.EndObject();
  return finish(buffer);
}

std::string test_permissions_json(const std::vector<std::string>& permissions) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  field(w, "kind", "storage#testIamPermissionsResponse");
  w.Key("permissions");
  w.StartArray();
  for (const auto& permission : permissions) w.String(permission);
  w.EndArray();
  w.EndObject();
  return finish(buffer);
}

std::string bucket_list_json(const std::vector<BucketRecord>& buckets,
                             const std::string& endpoint) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  field(w, "kind", "storage#buckets");
  w.Key("items");
  w.StartArray();
  for (const auto& bucket : buckets) write_bucket(w, bucket, endpoint);
  w.EndArray();
  w.EndObject();
  return finish(buffer);
}

std::string object_list_json(const ListPage& page, const std::string& endpoint,
                             const FieldMask& fields) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  if (fields.keeps("kind")) field(w, "kind", "storage#objects");
  if (!page.next_page_token.empty() && fields.keeps("nextPageToken")) {
    field(w, "nextPageToken", page.next_page_token);
  }
  if (!page.prefixes.empty() && fields.keeps("prefixes")) {
    w.Key("prefixes");
    w.StartArray();
    for (const auto& prefix : page.prefixes) w.String(prefix);
    w.EndArray();
  }
  if (!page.items.empty() && fields.keeps("items")) {
    const FieldMask& item_fields = fields.inside("items");
    w.Key("items");
    w.StartArray();
    for (const auto& item : page.items) write_object(w, item, endpoint, item_fields);
    w.EndArray();
  }
  w.EndObject();
  return finish(buffer);
}

std::string rewrite_json(const ObjectRecord& object, const std::string& endpoint) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  field(w, "kind", "storage#rewriteResponse");
  field(w, "totalBytesRewritten", std::to_string(object.size()));
  field(w, "objectSize", std::to_string(object.size()));
  w.Key("done");
  w.Bool(true);
  w.Key("resource");
  write_object(w, object, endpoint, FieldMask());
  w.EndObject();
  return finish(buffer);
}

const char* error_reason(int http_status) {
  switch (http_status) {
    case 400:
      return "invalid";
    case 401:
      return "required";
    case 403:
      return "forbidden";
    case 404:
      return "notFound";
    case 409:
      return "conflict";
    case 412:
      return "conditionNotMet";
    case 413:
      return "uploadTooLarge";
    case 416:
      return "requestedRangeNotSatisfiable";
    case 429:
      return "rateLimitExceeded";
    case 499:
      return "clientClosedRequest";
    case 501:
      return "notImplemented";
    case 503:
      return "backendError";
    default:
      return http_status >= 500 ? "backendError" : "invalid";
  }
}

std::string error_json(int http_status, const std::string& message) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("error");
  w.StartObject();
  w.Key("code");
  w.Int(http_status);
  field(w, "message", message);
  w.Key("errors");
  w.StartArray();
  w.StartObject();
  field(w, "domain", "global");
  field(w, "reason", error_reason(http_status));
  field(w, "message", message);
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return finish(buffer);
}

}  // namespace dataflux::emulator::internal
