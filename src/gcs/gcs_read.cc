#include "gcs/gcs_read.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/absl_view.h"
#include "core/byte_range.h"
#include "dataflux/crc32c.h"
#include "gcs/gcs_json.h"
#include "gcs/gcs_paths.h"

namespace dataflux::internal {

std::optional<std::uint32_t> crc32c_from_hash_headers(const std::vector<std::string>& values) {
  for (const auto& value : values) {
    for (absl::string_view part : absl::StrSplit(value, ',')) {
      part = absl::StripAsciiWhitespace(part);
      if (absl::ConsumePrefix(&part, "crc32c=")) {
        return crc32c_from_base64(sv(part));
      }
    }
  }
  return std::nullopt;
}

std::string GcsReadProtocol::url(const ReadObjectRequest& request) const {
  return gs_url(request.bucket, request.object);
}

absl::StatusOr<HttpRequest> GcsReadProtocol::media_request(const ReadObjectRequest& request,
                                                           const ReadPin& pin,
                                                           const std::optional<std::string>& range,
                                                           bool /*whole_checked*/) {
  QueryString query;
  query.add("alt", "media");
  if (pin.generation) query.add("generation", *pin.generation);
  HttpRequest http = client_->new_request(
      "GET", absl::StrCat("/download", object_path(request.bucket, request.object), query.str()));
  if (range) http.headers.emplace_back("Range", *range);
  // The stored bytes, as stored: no decompressive transcoding of gzip-encoded objects.
  http.headers.emplace_back("Accept-Encoding", "gzip");
  if (auto s = client_->authorize(http); !s.ok()) return s;
  return http;
}

MediaHeaders GcsReadProtocol::parse_media_headers(const HttpResponse& head,
                                                  bool /*whole_object*/) const {
  MediaHeaders out;
  if (auto g = head.header("x-goog-generation")) {
    std::int64_t v = 0;
    if (absl::SimpleAtoi(av(*g), &v)) out.version.generation = v;
  }
  if (auto stored = head.header("x-goog-stored-content-length")) {
    out.stored_size = parse_decimal_u64(*stored);
  }
  out.crc32c = crc32c_from_hash_headers(head.header_values("x-goog-hash"));
  const std::string stored_encoding = head.header("x-goog-stored-content-encoding").value_or("");
  const std::string encoding = head.header("content-encoding").value_or("identity");
  if (absl::EqualsIgnoreCase(stored_encoding, "gzip") &&
      !absl::EqualsIgnoreCase(encoding, "gzip")) {
    out.not_as_stored =
        "the server decompressed an object stored with Content-Encoding: gzip (decompressive "
        "transcoding, which ignores Range and defeats checksums) although the read asked for "
        "Accept-Encoding: gzip; its bytes were not used";
  }
  return out;
}

absl::StatusOr<HttpRequest> GcsReadProtocol::size_request(const ReadObjectRequest& request,
                                                          const ReadPin& pin) {
  QueryString query;
  query.add("fields", "name,size,generation,crc32c");
  if (pin.generation) query.add("generation", *pin.generation);
  HttpRequest http = client_->new_request(
      "GET", absl::StrCat(object_path(request.bucket, request.object), query.str()));
  if (auto s = client_->authorize(http); !s.ok()) return s;
  return http;
}

absl::StatusOr<ObjectSize> GcsReadProtocol::parse_size(const HttpResponse& response,
                                                       const ReadObjectRequest& request,
                                                       std::string_view context) const {
  auto meta = parse_object_resource(response.body, request.bucket, context);
  if (!meta.ok()) return meta.status();
  ObjectSize out;
  out.size = meta->size;
  out.version.generation = meta->generation;
  out.crc32c = meta->crc32c;
  return out;
}

}  // namespace dataflux::internal
