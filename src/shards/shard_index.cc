// SHARD.index.json: what a reader needs to fetch one sample of a shard with one ranged GET.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "absl/strings/str_cat.h"
#include "core/absl_view.h"
#include "dataflux/crc32c.h"
#include "dataflux/shards.h"

namespace dataflux {
namespace {

constexpr char kFormat[] = "dataflux-shard-index";
constexpr int kVersion = 1;

}  // namespace

std::string shard_index_name(std::string_view shard_name) {
  return absl::StrCat(internal::av(shard_name), ".index.json");
}

std::string shard_index_to_json(const ShardIndex& index) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("format");
  w.String(kFormat);
  w.Key("version");
  w.Int(kVersion);
  w.Key("shard");
  w.String(index.shard);
  w.Key("size");
  w.Uint64(index.size);
  w.Key("generation");
  w.Int64(index.generation);
  if (!index.etag.empty()) {
    w.Key("etag");
    w.String(index.etag);
  }
  if (index.crc32c) {
    w.Key("crc32c");
    w.String(crc32c_to_base64(*index.crc32c));
  }
  w.Key("samples");
  w.StartArray();
  for (const auto& s : index.samples) {
    w.StartObject();
    w.Key("key");
    w.String(s.key);
    w.Key("offset");
    w.Uint64(s.offset);
    w.Key("size");
    w.Uint64(s.size);
    w.Key("crc32c");
    w.String(crc32c_to_base64(s.crc32c));
    w.Key("fields");
    w.StartObject();
    for (const auto& f : s.fields) {
      w.Key(f.name.c_str(), static_cast<rapidjson::SizeType>(f.name.size()));
      w.StartArray();
      w.Uint64(f.offset);
      w.Uint64(f.size);
      w.EndArray();
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

absl::StatusOr<ShardIndex> shard_index_from_json(std::string_view json, const std::string& what) {
  auto bad = [&](std::string_view field) {
    return absl::DataLossError(absl::StrCat(what, ": not a shard index (", kFormat, " version ",
                                            kVersion, "): field \"", internal::av(field),
                                            "\" is missing or has the wrong type"));
  };
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return absl::DataLossError(absl::StrCat(what, ": not a shard index: invalid JSON"));
  }
  auto member = [&](const rapidjson::Value& v, const char* name) -> const rapidjson::Value* {
    auto it = v.FindMember(name);
    return it == v.MemberEnd() ? nullptr : &it->value;
  };
  const auto* format = member(doc, "format");
  if (format == nullptr || !format->IsString() ||
      std::string_view(format->GetString()) != kFormat) {
    return bad("format");
  }
  const auto* version = member(doc, "version");
  if (version == nullptr || !version->IsInt()) return bad("version");
  if (version->GetInt() != kVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": shard index version ", version->GetInt(),
                     " is not one this library reads (", kVersion, ")"));
  }
  ShardIndex index;
  const auto* shard = member(doc, "shard");
  const auto* size = member(doc, "size");
  const auto* generation = member(doc, "generation");
  const auto* samples = member(doc, "samples");
  if (shard == nullptr || !shard->IsString()) return bad("shard");
  if (size == nullptr || !size->IsUint64()) return bad("size");
  if (generation == nullptr || !generation->IsInt64()) return bad("generation");
  if (samples == nullptr || !samples->IsArray()) return bad("samples");
  index.shard = shard->GetString();
  index.size = size->GetUint64();
  index.generation = generation->GetInt64();
  if (const auto* etag = member(doc, "etag"); etag != nullptr) {
    if (!etag->IsString()) return bad("etag");
    index.etag = etag->GetString();
  }
  if (const auto* crc = member(doc, "crc32c"); crc != nullptr) {
    if (!crc->IsString()) return bad("crc32c");
    index.crc32c = crc32c_from_base64(crc->GetString());
    if (!index.crc32c) return bad("crc32c");
  }
  index.samples.reserve(samples->Size());
  for (const auto& s : samples->GetArray()) {
    if (!s.IsObject()) return bad("samples[]");
    ShardIndexEntry e;
    const auto* key = member(s, "key");
    const auto* offset = member(s, "offset");
    const auto* ssize = member(s, "size");
    const auto* crc = member(s, "crc32c");
    const auto* fields = member(s, "fields");
    if (key == nullptr || !key->IsString()) return bad("samples[].key");
    if (offset == nullptr || !offset->IsUint64()) return bad("samples[].offset");
    if (ssize == nullptr || !ssize->IsUint64()) return bad("samples[].size");
    if (crc == nullptr || !crc->IsString()) return bad("samples[].crc32c");
    if (fields == nullptr || !fields->IsObject()) return bad("samples[].fields");
    e.key = key->GetString();
    e.offset = offset->GetUint64();
    e.size = ssize->GetUint64();
    auto c = crc32c_from_base64(crc->GetString());
    if (!c) return bad("samples[].crc32c");
    e.crc32c = *c;
    if (e.offset > index.size || e.size > index.size - e.offset) {
      return absl::DataLossError(absl::StrCat(
          what, ": sample \"", e.key, "\" lies outside the shard's ", index.size, " bytes"));
    }
    for (const auto& f : fields->GetObject()) {
      if (!f.value.IsArray() || f.value.Size() != 2 || !f.value[0].IsUint64() ||
          !f.value[1].IsUint64()) {
        return bad("samples[].fields");
      }
      ShardIndexEntry::Field field{f.name.GetString(), f.value[0].GetUint64(),
                                   f.value[1].GetUint64()};
      if (field.offset < e.offset || field.size > e.offset + e.size - field.offset) {
        return absl::DataLossError(absl::StrCat(what, ": field \"", field.name, "\" of sample \"",
                                                e.key, "\" lies outside the sample's bytes"));
      }
      e.fields.push_back(std::move(field));
    }
    index.samples.push_back(std::move(e));
  }
  return index;
}

}  // namespace dataflux
