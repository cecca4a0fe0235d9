// The JSON side of the GCS API: parsing object resources, list pages and error bodies, and
// building the request bodies we send (upload metadata, compose).
//
// Servers are not trusted: malformed or mistyped JSON becomes absl::InternalError naming what
// was wrong and where (`context`, e.g. "LIST gs://b/prefix"), never a crash.
//
//   auto page = parse_list_page(response.body, "my-bucket", "LIST gs://my-bucket/train/");
//   if (!page.ok()) return page.status();
#ifndef DATAFLUX_SRC_GCS_GCS_JSON_H_
#define DATAFLUX_SRC_GCS_GCS_JSON_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "dataflux/object_store.h"

namespace dataflux::internal {

// The `fields=` projections: only what ObjectMetadata holds.
inline constexpr char kObjectFields[] =
    "bucket,name,size,generation,metageneration,crc32c,md5Hash,storageClass,contentType,updated";
inline constexpr char kListFields[] =
    "items(name,size,generation,metageneration,crc32c,md5Hash,storageClass,contentType,updated),"
    "prefixes,nextPageToken";
inline constexpr char kLeanListFields[] =
    "items(name,size,generation,crc32c,storageClass),prefixes,nextPageToken";

// Parses one object resource (a JSON object). `bucket` fills ObjectMetadata::bucket when the
// resource omits it (list items do with our projection).
absl::StatusOr<ObjectMetadata> parse_object_resource(std::string_view json, std::string_view bucket,
                                                     std::string_view context);
absl::StatusOr<ListObjectsPage> parse_list_page(std::string_view json, std::string_view bucket,
                                                std::string_view context);
// A rewrite (copy) response: done, the token to continue with, and the resource when done.
struct RewriteProgress {
  bool done = false;
  std::string rewrite_token;
  ObjectMetadata resource;
};
absl::StatusOr<RewriteProgress> parse_rewrite_response(std::string_view json,
                                                       std::string_view bucket,
                                                       std::string_view context);

// The human-readable message of a GCS error body ({"error": {"message": ...}}), or the body
// itself (shortened) when it is not that shape.
std::string error_message_from_body(std::string_view body);

// RFC 3339 ("2024-05-01T12:34:56.789Z") to a time point; nullopt when malformed.
std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text);

// {"name": ..., "contentType": ..., "crc32c": ...} for multipart and resumable uploads.
std::string upload_metadata_json(std::string_view object, std::string_view content_type,
                                 std::optional<std::uint32_t> crc32c);
// The body of objects.compose.
std::string compose_request_json(const ComposeObjectRequest& request);
// {"name": bucket} for buckets.insert.
std::string bucket_resource_json(std::string_view bucket);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_GCS_GCS_JSON_H_
