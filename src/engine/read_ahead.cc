#include "engine/read_ahead.h"

#include <algorithm>

namespace dataflux::internal {

ReadAhead::ReadAhead(std::shared_ptr<Fetcher> fetcher)
    : fetcher_(std::move(fetcher)), state_(std::make_shared<State>()) {}

ReadAhead::~ReadAhead() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [this] { return state_->fetches_in_flight == 0; });
}

void ReadAhead::start(const std::vector<Read>& reads, std::size_t chunk_objects) {
  const std::size_t chunk = std::max<std::size_t>(1, chunk_objects);
  for (std::size_t begin = 0; begin < reads.size(); begin += chunk) {
    const std::size_t end = std::min(reads.size(), begin + chunk);
    std::vector<FetchTarget> targets;
    std::vector<std::shared_ptr<Slot>> slots;
    for (std::size_t k = begin; k < end; ++k) {
      targets.push_back({reads[k].first, reads[k].second->buffer.data});
      slots.push_back(reads[k].second);
    }
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      ++state_->fetches_in_flight;
    }
    std::shared_ptr<State> state = state_;
    fetcher_->fetch_async(
        std::move(targets),
        [state, slots](std::size_t i, const absl::Status& status) {
          std::lock_guard<std::mutex> lock(state->mu);
          slots[i]->status = status;
          slots[i]->done = true;
          state->cv.notify_all();
        },
        [state, slots](absl::Status status) {
          std::lock_guard<std::mutex> lock(state->mu);
          // A fetch refused as a whole reports no item: its slots must still wake their waiters.
          for (auto& slot : slots) {
            if (slot->done) continue;
            slot->status = status.ok() ? absl::InternalError("read never completed") : status;
            slot->done = true;
          }
          --state->fetches_in_flight;
          state->cv.notify_all();
        });
  }
}

void ReadAhead::wait(std::unique_lock<std::mutex>& lock, const Slot& slot) {
  state_->cv.wait(lock, [&slot] { return slot.done; });
}

}  // namespace dataflux::internal
