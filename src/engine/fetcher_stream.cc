// PrefetchStream: a window of reads ahead of a sequential consumer, handed out in order.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <new>
#include <utility>

#include "core/io_buffer.h"
#include "dataflux/fetch.h"

namespace dataflux {

struct PrefetchStream::State {
  struct Slot {
    FetchBuffer buffer;
    std::uint64_t size = 0;
    bool done = false;
    absl::Status status;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Slot> slots;            // positions [head, head + slots.size()); guarded by mu
  std::size_t head = 0;              // guarded by mu
  std::size_t next = 0;              // first position not yet requested; guarded by mu
  std::uint64_t bytes_ahead = 0;     // bytes in `slots`; guarded by mu
  std::size_t chunks_in_flight = 0;  // guarded by mu
  absl::Status failed;               // sticky; guarded by mu
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
    : fetcher_(std::move(fetcher)),
      objects_(std::move(objects)),
      options_(options),
      allocate_(allocate ? std::move(allocate) : FetchAllocator(heap_buffer)),
      state_(std::make_shared<State>()) {
  options_.window_objects = std::max<std::size_t>(1, options_.window_objects);
  options_.chunk_objects = std::max<std::size_t>(1, options_.chunk_objects);
}

PrefetchStream::~PrefetchStream() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [this] { return state_->chunks_in_flight == 0; });
}

void PrefetchStream::refill() {
  for (;;) {
    std::vector<FetchTarget> targets;
    std::size_t first;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      first = state_->next;
      while (state_->next < objects_.size() && targets.size() < options_.chunk_objects &&
             state_->slots.size() < options_.window_objects &&
             (state_->slots.empty() || state_->bytes_ahead < options_.window_bytes)) {
        const ObjectEntry& object = objects_[state_->next];
        State::Slot slot;
        slot.size = object.size;
        slot.buffer = allocate_(object.size);
        targets.push_back({object, slot.buffer.data});
        state_->bytes_ahead += object.size;
        state_->slots.push_back(std::move(slot));
        ++state_->next;
      }
      if (targets.empty()) return;
      ++state_->chunks_in_flight;
    }
    std::shared_ptr<State> state = state_;
    fetcher_->fetch_async(
        std::move(targets),
        [state, first](std::size_t i, const absl::Status& status) {
          std::lock_guard<std::mutex> lock(state->mu);
          State::Slot& slot = state->slots[first + i - state->head];
          slot.done = true;
          slot.status = status;
          state->cv.notify_all();
        },
        [state](absl::Status) {
          std::lock_guard<std::mutex> lock(state->mu);
          --state->chunks_in_flight;
          state->cv.notify_all();
        });
  }
}

absl::StatusOr<std::optional<PrefetchStream::Item>> PrefetchStream::next() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->failed.ok()) return state_->failed;
    if (state_->head == objects_.size()) return std::optional<Item>();
  }
  refill();
  Item item;
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->cv.wait(lock, [this] { return state_->slots.front().done; });
    State::Slot slot = std::move(state_->slots.front());
    state_->slots.pop_front();
    state_->bytes_ahead -= slot.size;
    item.position = state_->head++;
    if (!slot.status.ok()) {
      state_->failed = slot.status;
      return slot.status;
    }
    item.buffer = std::move(slot.buffer);
    item.size = slot.size;
  }
  refill();
  return std::optional<Item>(std::move(item));
}

}  // namespace dataflux
