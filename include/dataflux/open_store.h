// OpenStore: the ObjectStore for a URL's scheme, so the same code runs on every backend.
//
//   auto store = dataflux::open_store("gs://my-bucket/train/");   // GCS
//   auto local = dataflux::open_store("/tmp/data/");               // local filesystem
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
#include "dataflux/url.h"

namespace dataflux {

struct StoreOptions {
  GcsOptions gcs;
  LocalOptions local;
};

// gs:// → a GCS store, shared between calls whose GcsOptions are equal in every field (the
// resolved endpoint, credentials, auth, retry and transport settings included);
// file:// and paths → a local store rooted at "/"; s3:// → Unimplemented until that backend.
absl::StatusOr<std::shared_ptr<ObjectStore>> open_store(const StorageUrl& url,
                                                        const StoreOptions& options = {});
absl::StatusOr<std::shared_ptr<ObjectStore>> open_store(std::string_view url,
                                                        const StoreOptions& options = {});

}  // namespace dataflux

#endif  // DATAFLUX_OPEN_STORE_H_
