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

// `rank`/`world_size` of -1 come from $RANK/$WORLD_SIZE, else 0/1; InvalidArgument unless
// 0 <= rank < world_size.
absl::Status resolve_partition(int* rank, int* world_size);

// The order of epoch `epoch` for `rank` of `world_size`: a permutation of [0, n) (the
// identity unless `shuffle`), fixed by (seed, epoch) alone, of which the rank takes positions
// rank, rank + world_size, ... Ranks are disjoint and together cover [0, n).
std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, std::uint64_t epoch,
                                     bool shuffle, int rank, int world_size);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_DATA_DATASET_STATE_H_
