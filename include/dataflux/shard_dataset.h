// Training from tar shards (WebDataset conventions) and from line-record files, on gs://,
// s3:// and local paths alike.
//
// ShardDataset is a StatefulDataset, as libtorch's ChunkDataset: it lists the shards once;
// each epoch it orders them from (seed, epoch), gives rank r the shards r, r + W, ...; reads
// several ahead within a byte budget (a large shard as parallel ranges); mixes their samples
// through a shuffle buffer whose output is a function of (seed, epoch, rank); and saves and
// loads its exact position (the same samples, none twice, none lost). A sample's fields become
// the Example through `fields` (as WebDataset's to_tuple("jpg;png", "cls")) or a transform.
// ShardMapDataset reads single samples of indexed shards with one ranged GET each, for any
// sampler. LineDataset streams the lines of every object under a URL (plain or gzip), with the
// same order, buffer, rank split and resume.
//
//   auto data = dataflux::ShardDataset("gs://b/shards/", dataflux::ShardDatasetOptions()
//       .fields({"jpg;png", "cls"}).decode_images(true).shuffle(true).seed(1));
//   auto loader = torch::data::make_data_loader(std::move(data),
//       torch::data::DataLoaderOptions(64).workers(0));   // the dataset reads ahead itself
//   for (auto& batch : *loader) { /* batch[i].data: HxWxC uint8, batch[i].target: int64 */ }
#ifndef DATAFLUX_SHARD_DATASET_H_
#define DATAFLUX_SHARD_DATASET_H_

#include <torch/arg.h>
#include <torch/data/datasets/base.h>
#include <torch/data/datasets/stateful.h>
#include <torch/data/example.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataflux/error.h"
#include "dataflux/object_store.h"
#include "dataflux/open_store.h"
#include "dataflux/shards.h"

namespace dataflux {

// One sample of a shard: its key and its fields, each a 1-D uint8 tensor of the member's bytes.
struct ShardSample {
  std::string key;                                         // "train/cat/001"
  std::string shard;                                       // the shard's URL, for messages
  std::vector<std::pair<std::string, at::Tensor>> fields;  // ("jpg", bytes), ("cls", bytes)

  // The field's bytes, or nullptr.
  const at::Tensor* field(const std::string& name) const;
};

using ShardTransform = std::function<torch::data::Example<>(ShardSample sample)>;

// What `fields` does with a sample that lacks one: fail (naming shard, key and field), or
// leave the sample out.
enum class MissingField { kError, kSkip };

// A field as a tensor, by its last extension, as WebDataset's default decoders do: "cls",
// "cls2", "index", "label", "id" (a decimal integer) -> int64 scalar; "pth" (torch.save from
// Python, or torch::pickle_save) -> the tensor ("data.pth" too); "jpg", "jpeg", "png" ->
// HxWxC uint8 when `decode_images`; anything else -> its bytes. Errors name the shard, the key
// and the field.
at::Tensor decode_field(const ShardSample& sample, const std::string& name, const at::Tensor& bytes,
                        bool decode_images);

struct ShardDatasetOptions {
  // to_tuple: data from the first entry, target from the second ("jpg;png": the first of these
  // the sample has), each through decode_field. Ignored when a transform is set.
  TORCH_ARG(std::vector<std::string>, fields) = {};
  TORCH_ARG(MissingField, missing_field) = MissingField::kError;
  TORCH_ARG(bool, decode_images) = false;  // for `fields`: decode jpg/jpeg/png fields
  // Overrides `fields`: the whole sample to the Example.
  TORCH_ARG(ShardTransform, transform) = nullptr;
  // Further prefixes of the same bucket whose shards join the listing (S3FileLister's several).
  TORCH_ARG(std::vector<std::string>, more_urls) = {};
  // The shard order of each epoch, and the buffer, are functions of (seed, epoch, rank).
  TORCH_ARG(std::uint64_t, seed) = 0;
  TORCH_ARG(bool, shuffle) = false;  // shards in random order, samples through the buffer
  TORCH_ARG(std::size_t, shuffle_buffer) = 1000;  // samples mixed at once (with shuffle)
  // Read-ahead: shards in flight, and their bytes (at least one shard is always read).
  // 2: one shard being consumed and the next arriving at full speed (more split the bandwidth,
  // so the head shard arrives later; bench/run shards measured 2 ~25% faster than 4).
  TORCH_ARG(std::size_t, shards_in_flight) = 2;
  TORCH_ARG(std::uint64_t, max_bytes_in_flight) = 512ull << 20;
  // A shard larger than this is read as parallel ranges of this size.
  TORCH_ARG(std::uint64_t, range_size) = 16ull << 20;
  TORCH_ARG(std::size_t, max_requests_in_flight) = 64;
  // -1 = $RANK / $WORLD_SIZE, else 0 / 1. Every rank needs a shard: fewer shards than ranks is
  // an error at construction (write smaller shards).
  TORCH_ARG(int, rank) = -1;
  TORCH_ARG(int, world_size) = -1;
  TORCH_ARG(int, listing_workers) = 0;
  TORCH_ARG(RetryOptions, retry) = {};
  TORCH_ARG(std::shared_ptr<ObjectStore>, store) = nullptr;
  TORCH_ARG(StoreOptions, store_options) = {};
};

namespace internal {
struct ShardStreamState;
struct ShardMapState;
}  // namespace internal

class ShardDataset : public torch::data::datasets::StatefulDataset<ShardDataset> {
 public:
  // Lists the shards under `url` (and options.more_urls()); throws Error when there are none,
  // or fewer than ranks, or neither fields nor a transform is given.
  explicit ShardDataset(const std::string& url, ShardDatasetOptions options = {});
  ShardDataset(ShardDataset&&) noexcept;
  ShardDataset& operator=(ShardDataset&&) noexcept;
  ~ShardDataset() override;

  // The next `batch_size` samples of this rank (fewer at the end), then nullopt until reset().
  // Thread-safe; transforms run outside the lock. Resume exactly with workers(0).
  torch::optional<std::vector<torch::data::Example<>>> get_batch(size_t batch_size) override;
  // Unknown until the shards are read (nullopt).
  torch::optional<size_t> size() const override;
  // Starts the next epoch; the first reset() after construction or load() keeps the position.
  void reset() override;
  void save(torch::serialize::OutputArchive& archive) const override;
  // Throws Error (FailedPrecondition) if the archive came from other shards, seed, buffer or
  // partition.
  void load(torch::serialize::InputArchive& archive) override;

  void set_epoch(std::uint64_t epoch);
  std::uint64_t epoch() const;
  std::size_t position() const;  // samples of this epoch handed out (skipped ones included)
  // This rank's shards this epoch, in order: indices into shards().
  std::vector<std::size_t> epoch_shards() const;
  const std::vector<ObjectEntry>& shards() const;

 private:
  std::unique_ptr<internal::ShardStreamState> state_;
};

struct ShardMapDatasetOptions {
  // As ShardDatasetOptions: to_tuple fields (a sample without one is an error), image
  // decoding, or a transform.
  TORCH_ARG(std::vector<std::string>, fields) = {};
  TORCH_ARG(bool, decode_images) = false;
  TORCH_ARG(ShardTransform, transform) = nullptr;
  TORCH_ARG(std::vector<std::string>, more_urls) = {};
  TORCH_ARG(int, listing_workers) = 0;
  TORCH_ARG(RetryOptions, retry) = {};
  TORCH_ARG(std::shared_ptr<ObjectStore>, store) = nullptr;
  TORCH_ARG(StoreOptions, store_options) = {};
};

// Map-style access to the samples of indexed shards (plain .tar with SHARD.index.json, as
// ShardWriter and `dataflux pack` write them), for any sampler: sample i is one ranged GET of
// its bytes, pinned to the shard version the index describes and checked against the index's
// CRC32C; get_batch reads the whole batch concurrently. Indices follow the shards' names and
// each shard's order. Copies share the listing and the index.
class ShardMapDataset : public torch::data::datasets::Dataset<ShardMapDataset> {
 public:
  // Lists the shards and reads every index (concurrently); throws Error when a shard has no
  // index, or an index describes another version of its shard.
  explicit ShardMapDataset(const std::string& url, ShardMapDatasetOptions options = {});

  torch::data::Example<> get(size_t index) override;
  std::vector<torch::data::Example<>> get_batch(c10::ArrayRef<size_t> indices) override;
  torch::optional<size_t> size() const override;

  const std::vector<ObjectEntry>& shards() const;
  // Sample i's shard (an index into shards()) and its index entry.
  std::pair<std::size_t, const ShardIndexEntry*> locate(size_t index) const;

 private:
  std::shared_ptr<const internal::ShardMapState> state_;
};

// pack_dataset: a libtorch dataset of Example<> into shards, one sample per index, key the
// zero-padded index ("000000042"), fields "data.pth" and "target.pth": each tensor as
// torch.save writes it (torch::pickle_save), so Python reads them with torch.load (and
// WebDataset's .decode() with to_tuple("data.pth", "target.pth")), and ShardDataset with
// fields({"data.pth", "target.pth"}). Examples are fetched and serialized by `workers`
// threads (the dataset's get() must be thread-safe, as the DataLoader's workers need too) and
// written in index order. Throws Error.
struct PackDatasetOptions {
  ShardWriterOptions writer;
  int workers = 4;
  // Called after each sample with (samples done, samples in all, bytes done).
  std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)> progress;
};

PackResult pack_examples(const std::function<torch::data::Example<>(size_t)>& get, size_t count,
                         const std::string& dest_prefix, PackDatasetOptions options = {});

template <typename Dataset>
PackResult pack_dataset(Dataset& dataset, const std::string& dest_prefix,
                        PackDatasetOptions options = {}) {
  const auto size = dataset.size();
  if (!size) {
    throw Error(absl::InvalidArgumentError(
        "pack_dataset: the dataset has no size(); pack_examples takes a count"));
  }
  return pack_examples([&dataset](size_t i) { return dataset.get(i); }, *size, dest_prefix,
                       std::move(options));
}

}  // namespace dataflux

#endif  // DATAFLUX_SHARD_DATASET_H_
