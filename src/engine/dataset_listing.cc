#include "engine/dataset_listing.h"

#include <algorithm>

namespace dataflux::internal {

absl::StatusOr<std::vector<ObjectEntry>> list_dataset_objects(
    ObjectStore& store, const std::string& bucket, const std::string& prefix,
    const DatasetListingOptions& /*options*/) {
  const std::string composed = kComposedObjectsPrefix;
  std::vector<ObjectEntry> out;
  ListObjectsRequest request;
  request.bucket = bucket;
  request.prefix = prefix;
  do {
    auto page = store.list_objects(request);
    if (!page.ok()) return page.status();
    for (auto& object : page->objects) {
      if (object.name.empty() || object.name.back() == '/') continue;
      if (object.name.compare(0, composed.size(), composed) == 0) continue;
      ObjectEntry entry;
      entry.name = std::move(object.name);
      entry.size = object.size;
      entry.generation = object.generation;
      entry.crc32c = object.crc32c;
      out.push_back(std::move(entry));
    }
    request.page_token = page->next_page_token;
  } while (!request.page_token.empty());
  // Pages arrive sorted; sorting again costs little and makes the order a promise.
  std::sort(out.begin(), out.end(),
            [](const ObjectEntry& a, const ObjectEntry& b) { return a.name < b.name; });
  return out;
}

}  // namespace dataflux::internal
