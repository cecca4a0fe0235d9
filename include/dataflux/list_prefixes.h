// Listing several prefixes at once (the S3FileLister use case): every object under any of the
// prefixes, each listed once, sorted by name. Works on every ObjectStore.
//
// Prefixes are listed concurrently, each page after page; a prefix inside another one is
// listed only once (as part of the shorter one). The first error stops the listing and names
// the prefix.
//
//   auto objects = dataflux::list_prefixes(*store, "my-bucket", {"train/a/", "train/b/"});
//   for (const auto& o : objects.value()) std::cout << o.name << " " << o.size << "\n";
#ifndef DATAFLUX_LIST_PREFIXES_H_
#define DATAFLUX_LIST_PREFIXES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dataflux/object_store.h"

namespace dataflux {

absl::StatusOr<std::vector<ObjectMetadata>> list_prefixes(ObjectStore& store,
                                                          const std::string& bucket,
                                                          std::vector<std::string> prefixes);

}  // namespace dataflux

#endif  // DATAFLUX_LIST_PREFIXES_H_
