// The one place datasets get their listing from: the parallel lister (dataflux/listing.h),
// with the filters every dataset wants.
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
// without Dataflux's temporaries (compose batches, checkpoint parts).
absl::StatusOr<std::vector<ObjectEntry>> list_dataset_objects(
    ObjectStore& store, const std::string& bucket, const std::string& prefix,
    const DatasetListingOptions& options = {});

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_ENGINE_DATASET_LISTING_H_
