// What every copy of a dataset shares (torch-free): the store, the listing, the fetcher, and
// the pure functions that decide the order and each rank's share.
#ifndef DATAFLUX_SRC_DATA_DATASET_STATE_H_
#define DATAFLUX_SRC_DATA_DATASET_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/map_prefetch.h"
#include "dataflux/fetch.h"
#include "dataflux/object_store.h"
#include "dataflux/open_store.h"
#include "dataflux/url.h"
#include "shards/order.h"

namespace dataflux::internal {

struct DatasetConfig {
  std::string url;
  std::string prefix;
  std::shared_ptr<ObjectStore> store;  // nullptr = open_store(url, store_options)
  StoreOptions store_options;
  FetchOptions fetch;
  int listing_workers = 0;
};

struct DatasetState {
  std::string location;  // "gs://bucket/prefix", for messages
  std::shared_ptr<ObjectStore> store;
  std::string bucket;
  std::vector<ObjectEntry> objects;
  std::shared_ptr<Fetcher> fetcher;
  std::uint64_t fingerprint = 0;  // of the listing's names and sizes
  // MapDataset's read-ahead, shared by every copy; declared after `fetcher` so it is destroyed
  // (waiting for its reads) first.
  std::unique_ptr<MapPrefetcher> map_prefetch;
};

// Opens the store and lists; NotFound when there is nothing under the URL.
absl::StatusOr<std::shared_ptr<DatasetState>> make_dataset_state(DatasetConfig config);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_DATA_DATASET_STATE_H_
