// MapDataset and StreamingDataset: the only translation unit of the datasets that includes
// torch headers (the order, partition and listing logic is torch-free, in dataset_state.cc).
#include "dataflux/dataset.h"

#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/tensor.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "data/byte_tensor.h"
#include "data/dataset_state.h"

namespace dataflux {
namespace internal {
namespace {

std::shared_ptr<DatasetState> open_dataset(const std::string& url, const DatasetOptions& options) {
  DatasetConfig config;
  config.url = url;
  config.prefix = options.prefix();
  config.store = options.store();
  config.store_options = with_retry(options.store_options(), options.retry());
  config.listing_workers = options.listing_workers();
  config.fetch.max_requests_in_flight = options.max_requests_in_flight();
  config.fetch.max_bytes_in_flight = options.max_bytes_in_flight();
  config.fetch.range_size = options.range_size();
  config.fetch.max_composite_object_size = options.max_composite_object_size();
  config.fetch.disable_compose = options.disable_compose();
  config.fetch.force_compose = options.force_compose();
  return value_or_throw(make_dataset_state(std::move(config)));
}

// A uint8 tensor as a fetch buffer: the read lands in the tensor that becomes the sample.
FetchBuffer tensor_buffer(std::uint64_t size) {
  auto tensor = std::make_shared<at::Tensor>(internal::byte_tensor(size));
  FetchBuffer buffer;
  buffer.data = static_cast<char*>(tensor->data_ptr());
  buffer.owner = std::move(tensor);
  return buffer;
}

const at::Tensor& buffer_tensor(const FetchBuffer& buffer) {
  return *std::static_pointer_cast<at::Tensor>(buffer.owner);
}

torch::data::Example<> apply(const DatasetTransform& transform, at::Tensor bytes,
                             const ObjectEntry& object, std::size_t index) {
  if (transform) return transform(std::move(bytes), object, index);
  return {std::move(bytes), at::scalar_tensor(static_cast<std::int64_t>(index), at::kLong)};
}

constexpr char kKey[] = "dataflux_streaming_dataset";

}  // namespace

// A StreamingDataset's mutable part, behind a pointer so the dataset can move into a
// DataLoader.
struct StreamCursor {
  DatasetTransform transform;
  std::uint64_t seed = 0;
  bool shuffle = false;
  int rank = 0;
  int world_size = 1;
  PrefetchOptions prefetch;

  mutable std::mutex mu;
  std::uint64_t epoch = 0;                 // guarded by mu
  std::size_t position = 0;                // samples handed out this epoch; guarded by mu
  std::vector<std::size_t> order;          // this rank's order this epoch; guarded by mu
  bool fresh = true;                       // the next reset() keeps the position; guarded by mu
  std::unique_ptr<PrefetchStream> stream;  // reads from `position` on; guarded by mu

  // Positions the order at the start of `e` (under mu).
  void start_epoch(const DatasetState& state, std::uint64_t e) {
    stream.reset();
    epoch = e;
    position = 0;
    order = epoch_order(state.objects.size(), seed, epoch, shuffle, rank, world_size);
  }
};

}  // namespace internal

// ---- MapDataset ------------------------------------------------------------------------------

MapDataset::MapDataset(const std::string& url, DatasetOptions options) {
  auto state = internal::open_dataset(url, options);
  state->map_prefetch = std::make_unique<internal::MapPrefetcher>(
      state->fetcher, &state->objects, options.prefetch(), options.max_bytes_in_flight(),
      internal::tensor_buffer);
  state_ = std::move(state);
  transform_ = options.transform();
}

torch::data::Example<> MapDataset::get(size_t index) {
  size_t indices[] = {index};
  return std::move(get_batch(indices).front());
}

std::vector<torch::data::Example<>> MapDataset::get_batch(c10::ArrayRef<size_t> indices) {
  const auto& objects = state_->objects;
  for (size_t index : indices) {
    if (index >= objects.size()) {
      throw Error(absl::OutOfRangeError(absl::StrCat("index ", index,
                                                     " is out of range: ", state_->location,
                                                     " has ", objects.size(), " objects")));
    }
  }
  std::vector<FetchBuffer> buffers;
  throw_if_error(state_->map_prefetch->get(indices.data(), indices.size(), &buffers));
  std::vector<torch::data::Example<>> out;
  out.reserve(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    out.push_back(internal::apply(transform_, internal::buffer_tensor(buffers[k]),
                                  objects[indices[k]], indices[k]));
  }
  return out;
}

torch::optional<size_t> MapDataset::size() const { return state_->objects.size(); }
const std::vector<ObjectEntry>& MapDataset::objects() const { return state_->objects; }
FetchStats MapDataset::fetch_stats() const { return state_->fetcher->stats(); }

// ---- StreamingDataset ------------------------------------------------------------------------

StreamingDataset::StreamingDataset(const std::string& url, DatasetOptions options)
    : state_(internal::open_dataset(url, options)),
      cursor_(std::make_unique<internal::StreamCursor>()) {
  int rank = options.rank(), world_size = options.world_size();
  throw_if_error(internal::resolve_partition(&rank, &world_size));
  cursor_->transform = options.transform();
  cursor_->seed = options.seed();
  cursor_->shuffle = options.shuffle();
  cursor_->rank = rank;
  cursor_->world_size = world_size;
  cursor_->prefetch.window_objects = options.prefetch();
  cursor_->prefetch.window_bytes = options.max_bytes_in_flight();
  std::lock_guard<std::mutex> lock(cursor_->mu);
  cursor_->start_epoch(*state_, 0);
}

StreamingDataset::StreamingDataset(StreamingDataset&&) noexcept = default;
StreamingDataset& StreamingDataset::operator=(StreamingDataset&&) noexcept = default;
StreamingDataset::~StreamingDataset() = default;

torch::optional<std::vector<torch::data::Example<>>> StreamingDataset::get_batch(
    size_t batch_size) {
  internal::StreamCursor& c = *cursor_;
  std::vector<std::pair<std::size_t, at::Tensor>> fetched;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.position >= c.order.size() || batch_size == 0) return torch::nullopt;
    if (!c.stream) {
      std::vector<ObjectEntry> rest;
      rest.reserve(c.order.size() - c.position);
      for (std::size_t k = c.position; k < c.order.size(); ++k) {
        rest.push_back(state_->objects[c.order[k]]);
      }
      c.stream = std::make_unique<PrefetchStream>(state_->fetcher, std::move(rest), c.prefetch,
                                                  internal::tensor_buffer);
    }
    const std::size_t n = std::min(batch_size, c.order.size() - c.position);
    for (std::size_t k = 0; k < n; ++k) {
      auto item = c.stream->next();
      if (!item.ok() || !item->has_value()) {
        // Nothing of this batch is handed out: the next call reads it again from here.
        c.stream.reset();
        throw Error(item.ok() ? absl::InternalError(absl::StrCat("the prefetch stream of ",
                                                                 state_->location, " ended early"))
                              : item.status());
      }
      fetched.emplace_back(c.order[c.position + k], internal::buffer_tensor((*item)->buffer));
    }
    c.position += n;
  }
  // Transforms run outside the lock, so several DataLoader workers decode at once.
  std::vector<torch::data::Example<>> out;
  out.reserve(fetched.size());
  for (auto& [index, tensor] : fetched) {
    out.push_back(internal::apply(c.transform, std::move(tensor), state_->objects[index], index));
  }
  return out;
}

torch::optional<size_t> StreamingDataset::size() const {
  std::lock_guard<std::mutex> lock(cursor_->mu);
  return cursor_->order.size();
}

void StreamingDataset::reset() {
  std::lock_guard<std::mutex> lock(cursor_->mu);
  if (cursor_->fresh) {
    cursor_->fresh = false;
    if (cursor_->position < cursor_->order.size()) return;
  }
  cursor_->start_epoch(*state_, cursor_->epoch + 1);
}

void StreamingDataset::set_epoch(std::uint64_t epoch) {
  std::lock_guard<std::mutex> lock(cursor_->mu);
  cursor_->start_epoch(*state_, epoch);
  cursor_->fresh = true;
}

void StreamingDataset::save(torch::serialize::OutputArchive& archive) const {
  std::lock_guard<std::mutex> lock(cursor_->mu);
  const internal::StreamCursor& c = *cursor_;
  std::vector<std::int64_t> values = {1,  // format version
                                      static_cast<std::int64_t>(c.epoch),
                                      static_cast<std::int64_t>(c.position),
                                      static_cast<std::int64_t>(c.seed),
                                      c.shuffle ? 1 : 0,
                                      c.rank,
                                      c.world_size,
                                      static_cast<std::int64_t>(state_->fingerprint)};
  archive.write(internal::kKey, at::tensor(values, at::kLong));
}

void StreamingDataset::load(torch::serialize::InputArchive& archive) {
  at::Tensor saved;
  archive.read(internal::kKey, saved);
  if (saved.scalar_type() != at::kLong || saved.dim() != 1 || saved.numel() != 8 ||
      saved[0].item<std::int64_t>() != 1) {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("load ", state_->location, ": not a StreamingDataset state archive")));
  }
  auto v = saved.accessor<std::int64_t, 1>();
  std::lock_guard<std::mutex> lock(cursor_->mu);
  internal::StreamCursor& c = *cursor_;
  auto mismatch = [&](const char* what, std::int64_t was, std::int64_t now) {
    if (was == now) return;
    throw Error(absl::FailedPreconditionError(
        absl::StrCat("load ", state_->location, ": the saved state has ", what, " ", was,
                     " but this dataset has ", now,
                     "; resume with the same listing, seed, shuffle, rank and world size")));
  };
  mismatch("seed", v[3], static_cast<std::int64_t>(c.seed));
  mismatch("shuffle", v[4], c.shuffle ? 1 : 0);
  mismatch("rank", v[5], c.rank);
  mismatch("world size", v[6], c.world_size);
  mismatch("listing fingerprint", v[7], static_cast<std::int64_t>(state_->fingerprint));
  c.start_epoch(*state_, static_cast<std::uint64_t>(v[1]));
  const auto position = static_cast<std::size_t>(v[2]);
  if (position > c.order.size()) mismatch("position", v[2], c.order.size());
  c.position = position;
  c.fresh = true;
}

std::uint64_t StreamingDataset::epoch() const {
  std::lock_guard<std::mutex> lock(cursor_->mu);
  return cursor_->epoch;
}
std::size_t StreamingDataset::position() const {
  std::lock_guard<std::mutex> lock(cursor_->mu);
  return cursor_->position;
}
int StreamingDataset::rank() const { return cursor_->rank; }
int StreamingDataset::world_size() const { return cursor_->world_size; }
std::vector<std::size_t> StreamingDataset::epoch_order() const {
  std::lock_guard<std::mutex> lock(cursor_->mu);
  return cursor_->order;
}
const std::vector<ObjectEntry>& StreamingDataset::objects() const { return state_->objects; }
FetchStats StreamingDataset::fetch_stats() const { return state_->fetcher->stats(); }

}  // namespace dataflux
