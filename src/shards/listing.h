// Listing several prefixes of one bucket as one sorted source list (shards, or any objects).
#ifndef DATAFLUX_SRC_SHARDS_LISTING_H_
#define DATAFLUX_SRC_SHARDS_LISTING_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dataflux/shards.h"

namespace dataflux::internal {

// Every object under each of `urls` (one bucket), sorted, without duplicates, placeholders or
// Dataflux's temporaries; with `shards_only`, only shards, each with its index if listed.
// NotFound when nothing is there, naming the URLs.
absl::StatusOr<ShardListing> list_under(const std::vector<std::string>& urls,
                                        std::shared_ptr<ObjectStore> store,
                                        const StoreOptions& store_options, int listing_workers,
                                        bool shards_only);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_SHARDS_LISTING_H_
