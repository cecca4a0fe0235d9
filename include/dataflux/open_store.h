// OpenStore: the ObjectStore for a URL's scheme, so the same code runs on every backend.
//
//   auto store = dataflux::open_store("gs://my-bucket/train/");   // GCS
//   auto local = dataflux::open_store("/tmp/data/");               // local filesystem
//   auto s3 = dataflux::open_store("s3://my-bucket/train/");       // S3 (AWS_* settings)
//   auto url = dataflux::StorageUrl::parse("gs://my-bucket/train/").value();
//   store.value()->list_objects({url.bucket, url.object});
#ifndef DATAFLUX_OPEN_STORE_H_
#define DATAFLUX_OPEN_STORE_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "dataflux/gcs.h"
#include "dataflux/local.h"
#include "dataflux/object_store.h"
#include "dataflux/s3.h"
#include "dataflux/url.h"

namespace dataflux {

struct StoreOptions {
  GcsOptions gcs;
  LocalOptions local;
  S3Options s3;
};

// gs:// → a GCS store, shared between calls whose GcsOptions are equal in every field (the
// resolved endpoint, credentials, auth, retry and transport settings included);
// file:// and paths → a local store rooted at "/"; s3:// → an S3 store (shared between calls
// whose options and AWS_* environment resolve to the same endpoint, region and credentials).
absl::StatusOr<std::shared_ptr<ObjectStore>> open_store(const StorageUrl& url,
                                                        const StoreOptions& options = {});
absl::StatusOr<std::shared_ptr<ObjectStore>> open_store(std::string_view url,
                                                        const StoreOptions& options = {});

// `options` with `retry` for every backend whose retry the caller left at its default; a
// default `retry` changes nothing. How DatasetOptions::retry reaches the store a dataset opens.
StoreOptions with_retry(StoreOptions options, const RetryOptions& retry);

}  // namespace dataflux

#endif  // DATAFLUX_OPEN_STORE_H_
