// Listing several prefixes at once (the S3FileLister use case): every object under any of the
// prefixes, each listed once, sorted by name. Works on every ObjectStore.
//
// Each prefix is listed by the fast lister (listing.h), within one worker budget for the whole
// call (ListOptions::workers, shared among the prefixes listed at once) and with its filters
// (directory placeholders and Dataflux temporaries are skipped by default). A prefix inside
// another one is listed only once (as part of the shorter one). The first error stops the
// listing and names the prefix. Returned objects carry name, size, generation and CRC32C.
//
//   auto objects = dataflux::list_prefixes(*store, "my-bucket", {"train/a/", "train/b/"});
//   for (const auto& o : objects.value()) std::cout << o.name << " " << o.size << "\n";
#ifndef DATAFLUX_LIST_PREFIXES_H_
#define DATAFLUX_LIST_PREFIXES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dataflux/listing.h"
#include "dataflux/object_store.h"

namespace dataflux {

absl::StatusOr<std::vector<ObjectMetadata>> list_prefixes(ObjectStore& store,
                                                          const std::string& bucket,
                                                          std::vector<std::string> prefixes,
                                                          const ListOptions& options = {});

}  // namespace dataflux

#endif  // DATAFLUX_LIST_PREFIXES_H_
