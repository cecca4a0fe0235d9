// Datasets: libtorch datasets over every object under a URL (gs://, s3://, file:// or a path).
//
// MapDataset is a torch::data::datasets::Dataset: get_batch(indices) fetches the whole batch
// concurrently (compose batches on GCS where they pay), for the stateless DataLoader and any
// sampler, DistributedRandomSampler included. Copies are cheap (the listing, the store and the
// fetcher are shared), as the DataLoader copies the dataset into every worker.
// StreamingDataset is a StatefulDataset: a deterministic order from (seed, epoch), optional
// shuffle, a disjoint share per rank (RANK/WORLD_SIZE), a prefetch window, and save/load of
// the exact position so a restarted job sees exactly the samples it had not yet seen.
// Both list once at construction (sorted by name) and read each object straight into a uint8
// tensor; a transform turns it into the Example. Failures throw dataflux::Error.
//
//   auto data = dataflux::MapDataset("gs://my-bucket/train/",
//                                    dataflux::DatasetOptions().transform(decode));
//   auto loader = torch::data::make_data_loader(
//       std::move(data).map(torch::data::transforms::Stack<>()),
//       torch::data::DataLoaderOptions(64).workers(4));
#ifndef DATAFLUX_DATASET_H_
#define DATAFLUX_DATASET_H_

#include <torch/arg.h>
#include <torch/data/datasets/base.h>
#include <torch/data/datasets/stateful.h>
#include <torch/data/example.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dataflux/error.h"
#include "dataflux/fetch.h"
#include "dataflux/object_store.h"
#include "dataflux/open_store.h"

namespace dataflux {

// Turns one object's bytes (a 1-D uint8 tensor that owns the downloaded buffer) into the
// Example. `index` is the object's position in the dataset's listing.
using DatasetTransform = std::function<torch::data::Example<>(
    at::Tensor bytes, const ObjectEntry& object, std::size_t index)>;

// Mirrors the Python connector's Config (prefix, max_composite_object_size, disable_compose,
// listing workers, retries), plus the read budgets, prefetch, order and partitioning.
struct DatasetOptions {
  // Appended to the URL's path: MapDataset("gs://b/", DatasetOptions().prefix("train/")).
  TORCH_ARG(std::string, prefix) = "";
  // Byte cap of one GCS compose batch; 0 turns compose off.
  TORCH_ARG(std::uint64_t, max_composite_object_size) = 100'000'000;
  // Never compose (needed for read-only buckets, where compose would be refused anyway).
  TORCH_ARG(bool, disable_compose) = false;
  // Compose every eligible batch, even where the pay-off rule says it does not pay. With the
  // defaults the rule never composes a dataset's fetches (see FetchOptions::min_compose_sources):
  // set this where requests, not latency or bytes, are the limit (a 429-ing bucket).
  TORCH_ARG(bool, force_compose) = false;
  // Workers of the parallel lister (ListOptions::workers); 0 = its default.
  TORCH_ARG(int, listing_workers) = 0;
  // Retries per storage operation, when the dataset opens its own store (not with store()), on
  // every backend whose retry store_options leaves at its default (with_retry()).
  TORCH_ARG(RetryOptions, retry) = {};
  // Reads in flight at once, over all DataLoader workers and the read-ahead of this dataset
  // (and its copies). Size it so workers x batch size fit with room to read ahead: a worker
  // waits for its batch's slowest read, so reads queued behind a full budget add a whole
  // round trip. 256 = the default transport's own limit (TransportOptions).
  TORCH_ARG(std::size_t, max_requests_in_flight) = 256;
  // Bytes of reads in flight (and, for StreamingDataset, read ahead) at once.
  TORCH_ARG(std::uint64_t, max_bytes_in_flight) = 256ull << 20;
  // Samples larger than this are read as parallel ranges of this size (a 150 MiB sample is
  // then many streams, not one); 0 reads every sample in one request.
  TORCH_ARG(std::uint64_t, range_size) = 16ull << 20;
  // Objects read ahead of the consumer (at most max_bytes_in_flight of them; 0 = none).
  // StreamingDataset: always, along its order. MapDataset: when get_batch is asked for
  // contiguous runs of indices (a SequentialSampler, or batches in index order), shared by all
  // copies of the dataset, so all DataLoader workers draw on one window. With a RandomSampler
  // the order is not visible to the dataset and nothing is read ahead.
  TORCH_ARG(std::size_t, prefetch) = 256;
  // StreamingDataset: the order is a function of (seed, epoch) only.
  TORCH_ARG(std::uint64_t, seed) = 0;
  TORCH_ARG(bool, shuffle) = false;
  // StreamingDataset: this process's share. -1 = $RANK / $WORLD_SIZE (as torchrun sets
  // them), else 0 / 1. Rank r gets positions r, r + W, r + 2W... of the epoch's order.
  TORCH_ARG(int, rank) = -1;
  TORCH_ARG(int, world_size) = -1;
  // nullptr = Example{bytes, int64 scalar index}.
  TORCH_ARG(DatasetTransform, transform) = nullptr;
  // A store to use instead of open_store(url, store_options()).
  TORCH_ARG(std::shared_ptr<ObjectStore>, store) = nullptr;
  TORCH_ARG(StoreOptions, store_options) = {};
};

namespace internal {
struct DatasetState;
struct StreamCursor;
}  // namespace internal

class MapDataset : public torch::data::datasets::Dataset<MapDataset> {
 public:
  // Lists `url` now; throws Error if it cannot, or if nothing is there.
  explicit MapDataset(const std::string& url, DatasetOptions options = {});

  torch::data::Example<> get(size_t index) override;
  // The whole batch concurrently; an index out of range throws Error (OutOfRange).
  std::vector<torch::data::Example<>> get_batch(c10::ArrayRef<size_t> indices) override;
  torch::optional<size_t> size() const override;

  // The listing: name, size, generation and CRC32C of every object, sorted by name.
  const std::vector<ObjectEntry>& objects() const;
  FetchStats fetch_stats() const;

 private:
  std::shared_ptr<const internal::DatasetState> state_;
  DatasetTransform transform_;
};

class StreamingDataset : public torch::data::datasets::StatefulDataset<StreamingDataset> {
 public:
  explicit StreamingDataset(const std::string& url, DatasetOptions options = {});
  StreamingDataset(StreamingDataset&&) noexcept;
  StreamingDataset& operator=(StreamingDataset&&) noexcept;
  ~StreamingDataset() override;

  // The next `batch_size` samples of this rank's order (fewer at the end), then nullopt for
  // every later call until reset(). Thread-safe: the stateful DataLoader calls one instance
  // from all its workers. Each batch is contiguous in the order; with DataLoader workers the
  // batches may reach the loop out of order and save() counts batches the loader fetched ahead
  // of the loop, so use workers(0) to resume exactly: the dataset prefetches itself.
  torch::optional<std::vector<torch::data::Example<>>> get_batch(size_t batch_size) override;
  // Samples this rank sees per epoch.
  torch::optional<size_t> size() const override;
  // Starts the next epoch. The first reset() after construction or load() keeps the position,
  // because the DataLoader calls reset() when each epoch begins, the first one included.
  void reset() override;
  // The exact position (epoch, samples handed out) plus what must match to resume.
  void save(torch::serialize::OutputArchive& archive) const override;
  // Throws Error (FailedPrecondition) if the archive came from another listing, seed or
  // partition.
  void load(torch::serialize::InputArchive& archive) override;

  // Jumps to the start of `epoch` (as DistributedSampler::set_epoch does).
  void set_epoch(std::uint64_t epoch);
  std::uint64_t epoch() const;
  // Samples of this epoch already handed out.
  std::size_t position() const;
  int rank() const;
  int world_size() const;
  // This rank's order for the current epoch: indices into objects().
  std::vector<std::size_t> epoch_order() const;
  const std::vector<ObjectEntry>& objects() const;
  FetchStats fetch_stats() const;

 private:
  std::shared_ptr<const internal::DatasetState> state_;
  std::unique_ptr<internal::StreamCursor> cursor_;
};

}  // namespace dataflux

#endif  // DATAFLUX_DATASET_H_
