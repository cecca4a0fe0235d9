// PrefetchStream: a window of reads ahead of a sequential consumer, handed out in order, on the
// one read-ahead machinery (engine/read_ahead.h).
#include <algorithm>
#include <deque>
#include <mutex>
#include <new>
#include <utility>

#include "core/io_buffer.h"
#include "dataflux/fetch.h"
#include "engine/read_ahead.h"

namespace dataflux {

struct PrefetchStream::State {
  explicit State(std::shared_ptr<Fetcher> fetcher) : ahead(std::move(fetcher)) {}
  struct Pending {
    std::shared_ptr<internal::ReadAhead::Slot> slot;
    std::uint64_t size = 0;
  };
  // Positions [head, head + pending.size()), all guarded by ahead.mu().
  std::deque<Pending> pending;
  std::size_t head = 0;
  std::size_t next = 0;           // first position not yet requested
  std::uint64_t bytes_ahead = 0;  // bytes in `pending`
  absl::Status failed;            // sticky
  internal::ReadAhead ahead;      // last: destroyed first, waiting for the reads in flight
};

namespace {

FetchBuffer heap_buffer(std::uint64_t size) {
  std::shared_ptr<char[]> data = internal::allocate_io_buffer(size);
  if (!data) throw std::bad_alloc();
  FetchBuffer buffer;
  buffer.data = data.get();
  buffer.owner = std::move(data);
  return buffer;
}

}  // namespace

PrefetchStream::PrefetchStream(std::shared_ptr<Fetcher> fetcher, std::vector<ObjectEntry> objects,
                               PrefetchOptions options, FetchAllocator allocate)
    : fetcher_(fetcher),
      objects_(std::move(objects)),
      options_(options),
      allocate_(allocate ? std::move(allocate) : FetchAllocator(heap_buffer)),
      state_(std::make_shared<State>(std::move(fetcher))) {
  options_.window_objects = std::max<std::size_t>(1, options_.window_objects);
  options_.chunk_objects = std::max<std::size_t>(1, options_.chunk_objects);
}

PrefetchStream::~PrefetchStream() = default;

void PrefetchStream::refill() {
  // One chunk at a time: the first chunk's reads start before the next chunk's buffers are
  // even allocated.
  for (;;) {
    std::vector<internal::ReadAhead::Read> reads;
    {
      std::lock_guard<std::mutex> lock(state_->ahead.mu());
      while (state_->next < objects_.size() && reads.size() < options_.chunk_objects &&
             state_->pending.size() < options_.window_objects &&
             (state_->pending.empty() || state_->bytes_ahead < options_.window_bytes)) {
        const ObjectEntry& object = objects_[state_->next];
        State::Pending p;
        p.size = object.size;
        p.slot = std::make_shared<internal::ReadAhead::Slot>();
        p.slot->buffer = allocate_(object.size);
        reads.emplace_back(object, p.slot);
        state_->bytes_ahead += object.size;
        state_->pending.push_back(std::move(p));
        ++state_->next;
      }
    }
    if (reads.empty()) return;
    state_->ahead.start(reads, options_.chunk_objects);
  }
}

absl::StatusOr<std::optional<PrefetchStream::Item>> PrefetchStream::next() {
  {
    std::lock_guard<std::mutex> lock(state_->ahead.mu());
    if (!state_->failed.ok()) return state_->failed;
    if (state_->head == objects_.size()) return std::optional<Item>();
  }
  refill();
  Item item;
  {
    std::unique_lock<std::mutex> lock(state_->ahead.mu());
    State::Pending p = std::move(state_->pending.front());
    state_->pending.pop_front();
    state_->bytes_ahead -= p.size;
    item.position = state_->head++;
    state_->ahead.wait(lock, *p.slot);
    if (!p.slot->status.ok()) {
      state_->failed = p.slot->status;
      return p.slot->status;
    }
    item.buffer = std::move(p.slot->buffer);
    item.size = p.size;
  }
  refill();
  return std::optional<Item>(std::move(item));
}

}  // namespace dataflux
