// LineDataset: the lines of every object under a URL (text, CSV or newline-delimited JSON,
// plain or gzip/zstd-compressed) as a StatefulDataset, as torchdata's S3FileLister +
// S3FileLoader + readlines streams them: objects read whole (a large one as parallel ranges)
// and ahead within a byte budget, ordered per epoch from (seed, epoch), split by rank (whole
// objects), mixed through a shuffle buffer, resumed exactly by save()/load(). A line is never
// split across reads; a line longer than max_line_bytes is an error naming object and offset.
//
//   auto lines = dataflux::LineDataset("gs://b/corpus/", dataflux::LineDatasetOptions()
//                                          .shuffle(true).seed(1));
//   while (auto batch = lines.get_batch(256)) { /* (*batch)[i].data: the line's bytes */ }
#ifndef DATAFLUX_LINE_DATASET_H_
#define DATAFLUX_LINE_DATASET_H_

#include <torch/arg.h>
#include <torch/data/datasets/stateful.h>
#include <torch/data/example.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dataflux/error.h"
#include "dataflux/object_store.h"
#include "dataflux/open_store.h"

namespace dataflux {

struct LineRecord {
  at::Tensor bytes;           // the line without its '\n' (or "\r\n"): 1-D uint8
  const ObjectEntry* object;  // where it came from (lives as long as the dataset)
  std::uint64_t line = 0;     // its number in the object (0-based; empty lines counted)
  std::uint64_t offset = 0;   // its first byte in the (decompressed) object
};

using LineTransform = std::function<torch::data::Example<>(LineRecord line)>;

struct LineDatasetOptions {
  TORCH_ARG(std::vector<std::string>, more_urls) = {};  // further prefixes, same bucket
  TORCH_ARG(std::size_t, max_line_bytes) = 1 << 20;
  TORCH_ARG(bool, skip_empty_lines) = true;
  // nullptr = Example{the line's bytes, int64 scalar line number}.
  TORCH_ARG(LineTransform, transform) = nullptr;
  TORCH_ARG(std::uint64_t, seed) = 0;
  TORCH_ARG(bool, shuffle) = false;                // object order and the buffer
  TORCH_ARG(std::size_t, shuffle_buffer) = 10000;  // lines mixed at once (with shuffle)
  TORCH_ARG(std::size_t, objects_in_flight) = 4;
  TORCH_ARG(std::uint64_t, max_bytes_in_flight) = 512ull << 20;
  TORCH_ARG(std::uint64_t, range_size) = 16ull << 20;
  TORCH_ARG(std::size_t, max_requests_in_flight) = 64;
  TORCH_ARG(int, rank) = -1;  // -1 = $RANK / $WORLD_SIZE; every rank needs an object
  TORCH_ARG(int, world_size) = -1;
  TORCH_ARG(int, listing_workers) = 0;
  TORCH_ARG(RetryOptions, retry) = {};
  TORCH_ARG(std::shared_ptr<ObjectStore>, store) = nullptr;
  TORCH_ARG(StoreOptions, store_options) = {};
};

namespace internal {
struct LineStreamState;
}

class LineDataset : public torch::data::datasets::StatefulDataset<LineDataset> {
 public:
  explicit LineDataset(const std::string& url, LineDatasetOptions options = {});
  LineDataset(LineDataset&&) noexcept;
  LineDataset& operator=(LineDataset&&) noexcept;
  ~LineDataset() override;

  // As ShardDataset: thread-safe, transforms outside the lock, nullopt at the end of the
  // epoch until reset(); resume exactly with workers(0).
  torch::optional<std::vector<torch::data::Example<>>> get_batch(size_t batch_size) override;
  torch::optional<size_t> size() const override;  // unknown (nullopt)
  void reset() override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  void set_epoch(std::uint64_t epoch);
  std::uint64_t epoch() const;
  std::size_t position() const;  // lines of this epoch handed out
  const std::vector<ObjectEntry>& objects() const;

 private:
  std::unique_ptr<internal::LineStreamState> state_;
};

}  // namespace dataflux

#endif  // DATAFLUX_LINE_DATASET_H_
