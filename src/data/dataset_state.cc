#include "data/dataset_state.h"

#include "absl/strings/str_cat.h"
#include "dataflux/crc32c.h"
#include "dataflux/open_store.h"
#include "engine/dataset_listing.h"

namespace dataflux::internal {

absl::StatusOr<std::shared_ptr<DatasetState>> make_dataset_state(DatasetConfig config) {
  auto url = StorageUrl::parse(config.url);
  if (!url.ok()) return url.status();
  auto state = std::make_shared<DatasetState>();
  state->bucket = url->bucket;
  const std::string prefix = url->object + config.prefix;
  StorageUrl where = *url;
  where.object = prefix;
  state->location = where.to_string();
  if (config.store) {
    state->store = std::move(config.store);
  } else {
    auto store = open_store(*url, config.store_options);
    if (!store.ok()) return store.status();
    state->store = *std::move(store);
  }
  DatasetListingOptions listing;
  listing.workers = config.listing_workers;
  auto objects = list_dataset_objects(*state->store, state->bucket, prefix, listing);
  if (!objects.ok()) {
    return absl::Status(objects.status().code(), absl::StrCat("listing ", state->location, ": ",
                                                              objects.status().message()));
  }
  if (objects->empty()) {
    return absl::NotFoundError(absl::StrCat("no objects under ", state->location,
                                            " (is the prefix right? it must end in '/' to "
                                            "name a directory)"));
  }
  state->objects = *std::move(objects);
  std::uint32_t crc = 0;
  for (const auto& o : state->objects) {
    crc = crc32c_extend(crc, o.name);
    crc = crc32c_extend(crc, &o.size, sizeof(o.size));
  }
  state->fingerprint = (static_cast<std::uint64_t>(state->objects.size()) << 32) | crc;
  state->fetcher = std::make_shared<Fetcher>(state->store, state->bucket, config.fetch);
  return state;
}

}  // namespace dataflux::internal
