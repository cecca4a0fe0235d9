#include "engine/dataset_listing.h"

#include "dataflux/listing.h"

namespace dataflux::internal {

absl::StatusOr<std::vector<ObjectEntry>> list_dataset_objects(
    ObjectStore& store, const std::string& bucket, const std::string& prefix,
    const DatasetListingOptions& options) {
  // The parallel lister skips "directory" placeholders and Dataflux's temporaries (compose
  // batches, checkpoint parts) and returns names sorted by byte order, each once.
  ListOptions list_options;
  if (options.workers > 0) list_options.workers = options.workers;
  auto listing = list_objects_fast(store, bucket, prefix, list_options);
  if (!listing.ok()) return listing.status();
  std::vector<ObjectEntry> out;
  out.reserve(listing->size());
  for (ObjectEntry entry : *listing) out.push_back(std::move(entry));
  return out;
}

}  // namespace dataflux::internal
