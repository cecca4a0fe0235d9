// The one place datasets get their listing from. Today it pages through
// ObjectStore::list_objects sequentially; the parallel lister (FastLister) replaces the body of
// list_dataset_objects() and nothing else.
#ifndef DATAFLUX_SRC_ENGINE_DATASET_LISTING_H_
#define DATAFLUX_SRC_ENGINE_DATASET_LISTING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dataflux/fetch.h"
#include "dataflux/object_store.h"

namespace dataflux::internal {

struct DatasetListingOptions {
  int workers = 0;  // for the parallel lister; 0 = its default
};

// Every object under `prefix` in `bucket`, sorted by name (byte order, so every rank and every
// restart sees the same order), without "directory" placeholders (names ending in '/') and
// without compose temporaries (kComposedObjectsPrefix).
absl::StatusOr<std::vector<ObjectEntry>> list_dataset_objects(
    ObjectStore& store, const std::string& bucket, const std::string& prefix,
    const DatasetListingOptions& options = {});

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_ENGINE_DATASET_LISTING_H_
