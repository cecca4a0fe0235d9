// StorageUrl: parses the URLs users hand to datasets and checkpoints.
//
//   gs://bucket/object/name     Google Cloud Storage (gcs:// is accepted too)
//   s3://bucket/key             S3-compatible stores
//   file:///abs/path, /abs/path, rel/path   the local filesystem (relative to the cwd)
//
//   auto url = dataflux::StorageUrl::parse("gs://my-bucket/train/0001.jpg");
//   if (!url.ok()) std::cerr << url.status();   // names the URL and what is wrong
//   url->bucket;   // "my-bucket"
//   url->object;   // "train/0001.jpg"
//
// For local paths `bucket` is the filesystem root "/" and `object` the absolute path
// without its leading slash, so object names behave the same on every backend.
#ifndef DATAFLUX_URL_H_
#define DATAFLUX_URL_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace dataflux {

enum class Scheme { kGcs, kS3, kFile };

struct StorageUrl {
  Scheme scheme = Scheme::kFile;
  std::string bucket;
  std::string object;  // may be empty (the whole bucket) or end in '/' (a prefix)

  // Validates bucket names (GCS/S3 naming rules) and object names (valid UTF-8, no NUL,
  // CR or LF, at most 1024 bytes) and says precisely what is wrong.
  static absl::StatusOr<StorageUrl> parse(std::string_view url);
  // The canonical spelling: gs://b/o, s3://b/o, file:///path.
  std::string to_string() const;
};

std::string_view scheme_name(Scheme scheme);  // "gs", "s3", "file"

// Checks a bucket name against the GCS/S3 rules; the error names the bucket and the rule.
absl::Status validate_bucket_name(std::string_view bucket);
// Checks an object name: non-empty, at most 1024 bytes of valid UTF-8, no NUL/CR/LF.
absl::Status validate_object_name(std::string_view object);

}  // namespace dataflux

#endif  // DATAFLUX_URL_H_
