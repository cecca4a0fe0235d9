// LineDataset: text objects streamed through the record pipeline (shards/record_stream.h).
#include "dataflux/line_dataset.h"

#include <ATen/ops/from_blob.h>
#include <ATen/ops/scalar_tensor.h>

#include <algorithm>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "data/byte_tensor.h"
#include "data/record_cursor.h"
#include "shards/lines.h"

namespace dataflux {
namespace internal {

struct LineStreamState {
  RecordCursor<LineRecord> cursor;
  LineTransform transform;
};

namespace {

constexpr char kKey[] = "dataflux_line_dataset";

FetchBuffer tensor_buffer(std::uint64_t size) {
  auto tensor = std::make_shared<at::Tensor>(byte_tensor(size));
  FetchBuffer buffer;
  buffer.data = static_cast<char*>(tensor->data_ptr());
  buffer.owner = std::move(tensor);
  return buffer;
}

}  // namespace
}  // namespace internal

LineDataset::LineDataset(const std::string& url, LineDatasetOptions options)
    : state_(std::make_unique<internal::LineStreamState>()) {
  internal::RecordSourceOptions o;
  o.kind = "LineDataset";
  o.unit = "objects";
  o.urls = {url};
  o.urls.insert(o.urls.end(), options.more_urls().begin(), options.more_urls().end());
  o.shards_only = false;
  o.store = options.store();
  o.store_options = with_retry(options.store_options(), options.retry());
  o.listing_workers = options.listing_workers();
  o.rank = options.rank();
  o.world_size = options.world_size();
  o.seed = options.seed();
  o.shuffle = options.shuffle();
  o.shuffle_buffer = options.shuffle_buffer();
  o.sources_in_flight = options.objects_in_flight();
  o.max_bytes_in_flight = options.max_bytes_in_flight();
  o.range_size = options.range_size();
  o.max_requests_in_flight = options.max_requests_in_flight();
  auto& c = state_->cursor;
  ShardListing listing = c.open(o);
  c.allocate = internal::tensor_buffer;
  state_->transform = options.transform();
  auto store = listing.store;
  auto bucket = listing.bucket;
  const std::vector<ObjectEntry>* all = &c.sources;  // sorted by name; stable (state_ is)
  const std::size_t max_line = options.max_line_bytes();
  const bool skip_empty = options.skip_empty_lines();
  c.parse = [store, bucket, all, max_line, skip_empty](
                std::size_t, const ObjectEntry& read, const FetchBuffer& bytes, std::uint64_t size,
                std::vector<LineRecord>* out) -> absl::Status {
    // Records point at the dataset's own entry, which outlives every stream.
    const ObjectEntry& object = *std::lower_bound(
        all->begin(), all->end(), read,
        [](const ObjectEntry& a, const ObjectEntry& b) { return a.name < b.name; });
    const std::string url = store->url(bucket, object.name);
    at::Tensor text = *std::static_pointer_cast<at::Tensor>(bytes.owner);
    if (internal::is_compressed(bytes.data, size)) {
      auto plain = internal::decompress(bytes.data, size, url);
      if (!plain.ok()) return plain.status();
      // The decompressed string becomes the tensor's storage, not a copy of it.
      auto owned = std::make_shared<std::string>(std::move(*plain));
      text = at::from_blob(
          owned->data(), {static_cast<std::int64_t>(owned->size())},
          [owned](void*) mutable { owned.reset(); }, at::kByte);
    }
    const std::string_view view(static_cast<const char*>(text.data_ptr()),
                                static_cast<std::size_t>(text.numel()));
    std::uint64_t line = 0;
    // Line numbers count every line, empty ones too, so they match `sed -n` and editors.
    std::uint64_t next_offset = 0;
    return internal::for_each_line(
        view, max_line, skip_empty, url, [&](std::uint64_t offset, std::size_t length) {
          for (std::size_t k = next_offset; k < offset; ++k) {
            if (view[k] == '\n') ++line;
          }
          next_offset = offset;
          out->push_back(LineRecord{
              text.narrow(0, static_cast<std::int64_t>(offset), static_cast<std::int64_t>(length)),
              &object, line, offset});
        });
  };
  c.set_epoch_locked(0);
}

LineDataset::LineDataset(LineDataset&&) noexcept = default;
LineDataset& LineDataset::operator=(LineDataset&&) noexcept = default;
LineDataset::~LineDataset() = default;

torch::optional<std::vector<torch::data::Example<>>> LineDataset::get_batch(size_t batch_size) {
  auto& s = *state_;
  std::vector<LineRecord> lines;
  {
    std::lock_guard<std::mutex> lock(s.cursor.mu);
    if (batch_size == 0) return torch::nullopt;
    lines = s.cursor.pull(batch_size, nullptr);
  }
  if (lines.empty()) return torch::nullopt;
  std::vector<torch::data::Example<>> out;
  out.reserve(lines.size());
  for (auto& l : lines) {
    if (s.transform) {
      out.push_back(s.transform(std::move(l)));
    } else {
      out.push_back(
          {std::move(l.bytes), at::scalar_tensor(static_cast<std::int64_t>(l.line), at::kLong)});
    }
  }
  return out;
}

torch::optional<size_t> LineDataset::size() const { return torch::nullopt; }

void LineDataset::reset() { state_->cursor.reset_locked(); }
void LineDataset::set_epoch(std::uint64_t epoch) { state_->cursor.set_epoch_locked(epoch); }
void LineDataset::save(torch::serialize::OutputArchive& archive) const {
  state_->cursor.save_locked(archive, internal::kKey);
}
void LineDataset::load(torch::serialize::InputArchive& archive) {
  state_->cursor.load_locked(archive, internal::kKey);
}
std::uint64_t LineDataset::epoch() const { return state_->cursor.epoch_locked(); }
std::size_t LineDataset::position() const { return state_->cursor.position_locked(); }
const std::vector<ObjectEntry>& LineDataset::objects() const { return state_->cursor.sources; }

}  // namespace dataflux
