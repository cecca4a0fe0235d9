#include "gcs/gcs_json.h"

#include <string>
#include <type_traits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/absl_view.h"
#include "dataflux/crc32c.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace dataflux::internal {
namespace {

absl::Status malformed(std::string_view context, std::string_view what) {
  return absl::InternalError(absl::StrCat(av(context), ": malformed JSON from server: ", av(what)));
}

absl::Status parse_document(std::string_view json, std::string_view context,
                            rapidjson::Document* doc) {
  doc->Parse(json.data(), json.size());
  if (doc->HasParseError()) {
    return malformed(context, absl::StrCat(rapidjson::GetParseError_En(doc->GetParseError()),
                                           " at offset ", doc->GetErrorOffset()));
  }
  if (!doc->IsObject()) return malformed(context, "expected a JSON object");
  return absl::OkStatus();
}

// GCS sends 64-bit integers as JSON strings; accept plain numbers as well.
template <typename Int>
absl::Status read_int(const rapidjson::Value& obj, const char* field, std::string_view context,
                      Int* out) {
  auto it = obj.FindMember(field);
  if (it == obj.MemberEnd()) return absl::OkStatus();
  const rapidjson::Value& v = it->value;
  if (v.IsString()) {
    if (!absl::SimpleAtoi(absl::string_view(v.GetString(), v.GetStringLength()), out)) {
      return malformed(context,
                       absl::StrCat("field '", field, "' is not an integer: \"",
                                    absl::string_view(v.GetString(), v.GetStringLength()), "\""));
    }
    return absl::OkStatus();
  }
  if constexpr (std::is_unsigned_v<Int>) {
    if (v.IsUint64()) {
      *out = v.GetUint64();
      return absl::OkStatus();
    }
  } else {
    if (v.IsInt64()) {
      *out = v.GetInt64();
      return absl::OkStatus();
    }
  }
  return malformed(context, absl::StrCat("field '", field, "' is not an integer"));
}

absl::Status read_string(const rapidjson::Value& obj, const char* field, std::string_view context,
                         std::string* out) {
  auto it = obj.FindMember(field);
  if (it == obj.MemberEnd()) return absl::OkStatus();
  if (!it->value.IsString()) {
    return malformed(context, absl::StrCat("field '", field, "' is not a string"));
  }
  out->assign(it->value.GetString(), it->value.GetStringLength());
  return absl::OkStatus();
}

absl::StatusOr<ObjectMetadata> parse_object_value(const rapidjson::Value& obj,
                                                  std::string_view bucket,
                                                  std::string_view context) {
  if (!obj.IsObject()) return malformed(context, "object resource is not a JSON object");
  ObjectMetadata meta;
  meta.bucket = std::string(bucket);
  std::string crc, updated;
  absl::Status s;
  if (!(s = read_string(obj, "bucket", context, &meta.bucket)).ok()) return s;
  if (!(s = read_string(obj, "name", context, &meta.name)).ok()) return s;
  if (!(s = read_int(obj, "size", context, &meta.size)).ok()) return s;
  if (!(s = read_int(obj, "generation", context, &meta.generation)).ok()) return s;
  if (!(s = read_int(obj, "metageneration", context, &meta.metageneration)).ok()) return s;
  if (!(s = read_string(obj, "crc32c", context, &crc)).ok()) return s;
  if (!(s = read_string(obj, "md5Hash", context, &meta.md5_hash)).ok()) return s;
  if (!(s = read_string(obj, "storageClass", context, &meta.storage_class)).ok()) return s;
  if (!(s = read_string(obj, "contentType", context, &meta.content_type)).ok()) return s;
  if (!(s = read_string(obj, "updated", context, &updated)).ok()) return s;
  if (meta.name.empty()) return malformed(context, "object resource has no 'name'");
  if (!crc.empty()) {
    meta.crc32c = crc32c_from_base64(crc);
    if (!meta.crc32c) return malformed(context, absl::StrCat("bad crc32c \"", crc, "\""));
  }
  if (!updated.empty()) {
    auto t = parse_rfc3339(updated);
    if (!t) return malformed(context, absl::StrCat("bad 'updated' time \"", updated, "\""));
    meta.updated = *t;
  }
  return meta;
}

std::string to_string(const rapidjson::Document& doc) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

rapidjson::Value json_string(std::string_view s, rapidjson::Document::AllocatorType& alloc) {
  rapidjson::Value v;
  v.SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()), alloc);
  return v;
}

}  // namespace

absl::StatusOr<ObjectMetadata> parse_object_resource(std::string_view json, std::string_view bucket,
                                                     std::string_view context) {
  rapidjson::Document doc;
  if (auto s = parse_document(json, context, &doc); !s.ok()) return s;
  return parse_object_value(doc, bucket, context);
}

absl::StatusOr<ListObjectsPage> parse_list_page(std::string_view json, std::string_view bucket,
                                                std::string_view context) {
  rapidjson::Document doc;
  if (auto s = parse_document(json, context, &doc); !s.ok()) return s;
  ListObjectsPage page;
  if (auto it = doc.FindMember("items"); it != doc.MemberEnd()) {
    if (!it->value.IsArray()) return malformed(context, "'items' is not an array");
    page.objects.reserve(it->value.Size());
    for (const auto& item : it->value.GetArray()) {
      auto meta = parse_object_value(item, bucket, context);
      if (!meta.ok()) return meta.status();
      page.objects.push_back(*std::move(meta));
    }
  }
  if (auto it = doc.FindMember("prefixes"); it != doc.MemberEnd()) {
    if (!it->value.IsArray()) return malformed(context, "'prefixes' is not an array");
    for (const auto& p : it->value.GetArray()) {
      if (!p.IsString()) return malformed(context, "a prefix is not a string");
      page.prefixes.emplace_back(p.GetString(), p.GetStringLength());
    }
  }
  if (auto s = read_string(doc, "nextPageToken", context, &page.next_page_token); !s.ok()) return s;
  return page;
}

absl::StatusOr<RewriteProgress> parse_rewrite_response(std::string_view json,
                                                       std::string_view bucket,
                                                       std::string_view context) {
  rapidjson::Document doc;
  if (auto s = parse_document(json, context, &doc); !s.ok()) return s;
  RewriteProgress progress;
  auto done = doc.FindMember("done");
  if (done == doc.MemberEnd() || !done->value.IsBool()) {
    return malformed(context, "rewrite response has no boolean 'done'");
  }
  progress.done = done->value.GetBool();
  if (auto s = read_string(doc, "rewriteToken", context, &progress.rewrite_token); !s.ok()) {
    return s;
  }
  if (progress.done) {
    auto res = doc.FindMember("resource");
    if (res == doc.MemberEnd()) return malformed(context, "finished rewrite has no 'resource'");
    auto meta = parse_object_value(res->value, bucket, context);
    if (!meta.ok()) return meta.status();
    progress.resource = *std::move(meta);
  } else if (progress.rewrite_token.empty()) {
    return malformed(context, "unfinished rewrite has no 'rewriteToken'");
  }
  return progress;
}

std::string error_message_from_body(std::string_view body) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (!doc.HasParseError() && doc.IsObject()) {
    auto err = doc.FindMember("error");
    if (err != doc.MemberEnd()) {
      if (err->value.IsObject()) {
        auto msg = err->value.FindMember("message");
        if (msg != err->value.MemberEnd() && msg->value.IsString()) {
          return std::string(msg->value.GetString(), msg->value.GetStringLength());
        }
      } else if (err->value.IsString()) {
        return std::string(err->value.GetString(), err->value.GetStringLength());
      }
    }
  }
  constexpr std::size_t kMax = 300;
  if (body.size() <= kMax) return std::string(body);
  return absl::StrCat(av(body.substr(0, kMax)), "...");
}

std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, std::string(text), &t, &err)) return std::nullopt;
  return absl::ToChronoTime(t);
}

std::string upload_metadata_json(std::string_view object, std::string_view content_type,
                                 std::optional<std::uint32_t> crc32c) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& alloc = doc.GetAllocator();
  doc.AddMember("name", json_string(object, alloc), alloc);
  if (!content_type.empty()) doc.AddMember("contentType", json_string(content_type, alloc), alloc);
  if (crc32c) doc.AddMember("crc32c", json_string(crc32c_to_base64(*crc32c), alloc), alloc);
  return to_string(doc);
}

std::string compose_request_json(const ComposeObjectRequest& request) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& alloc = doc.GetAllocator();
  rapidjson::Value destination(rapidjson::kObjectType);
  destination.AddMember("contentType", json_string(request.content_type, alloc), alloc);
  doc.AddMember("destination", destination, alloc);
  rapidjson::Value sources(rapidjson::kArrayType);
  for (const auto& source : request.sources) {
    rapidjson::Value s(rapidjson::kObjectType);
    s.AddMember("name", json_string(source.name, alloc), alloc);
    if (source.generation) {
      std::string gen = std::to_string(*source.generation);
      s.AddMember("generation", json_string(gen, alloc), alloc);
      rapidjson::Value pre(rapidjson::kObjectType);
      pre.AddMember("ifGenerationMatch", json_string(gen, alloc), alloc);
      s.AddMember("objectPreconditions", pre, alloc);
    }
    sources.PushBack(s, alloc);
  }
  doc.AddMember("sourceObjects", sources, alloc);
  return to_string(doc);
}

std::string bucket_resource_json(std::string_view bucket) {
  rapidjson::Document doc(rapidjson::kObjectType);
  doc.AddMember("name", json_string(bucket, doc.GetAllocator()), doc.GetAllocator());
  return to_string(doc);
}

}  // namespace dataflux::internal
