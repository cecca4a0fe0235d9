#include "data/map_prefetch.h"

#include <algorithm>
#include <utility>

namespace dataflux::internal {
namespace {

constexpr std::size_t kChunk = 32;  // objects per read-ahead fetch (a compose batch at most)

}  // namespace

MapPrefetcher::MapPrefetcher(std::shared_ptr<Fetcher> fetcher,
                             const std::vector<ObjectEntry>* objects, std::size_t window_objects,
                             std::uint64_t window_bytes, FetchAllocator allocate)
    : fetcher_(std::move(fetcher)),
      objects_(objects),
      window_objects_(window_objects),
      window_bytes_(window_bytes),
      allocate_(std::move(allocate)),
      served_(window_objects > 0 ? objects->size() : 0, 0),
      reads_(fetcher_) {}

void MapPrefetcher::drop_ahead_unless(std::size_t from, std::size_t to) {
  for (auto it = ahead_.begin(); it != ahead_.end();) {
    if (it->first < from || it->first >= to) {
      // A read still in flight finishes into a buffer that its callback alone keeps.
      ahead_bytes_ -= (*objects_)[it->first].size;
      ++dropped_;
      it = ahead_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<ReadAhead::Read> MapPrefetcher::plan_ahead(std::size_t first, std::size_t end) {
  std::vector<ReadAhead::Read> planned;
  // Workers ask in any order: a batch past the frontier moves it, so the read-ahead never
  // reads what a worker is already fetching itself.
  next_ = std::max(next_, end);
  // Entries far behind the batches being asked for were skipped; free their room.
  if (first > window_objects_) drop_ahead_unless(first - window_objects_, objects_->size());
  while (next_ < objects_->size() && ahead_.size() < window_objects_ &&
         (ahead_.empty() || ahead_bytes_ + (*objects_)[next_].size <= window_bytes_)) {
    const std::size_t index = next_++;
    if (served_[index] || ahead_.count(index) != 0) continue;
    auto entry = std::make_shared<Entry>();
    entry->buffer = allocate_((*objects_)[index].size);
    ahead_.emplace(index, entry);
    ahead_bytes_ += (*objects_)[index].size;
    planned.emplace_back((*objects_)[index], std::move(entry));
  }
  return planned;
}

absl::Status MapPrefetcher::get(const std::size_t* indices, std::size_t n,
                                std::vector<FetchBuffer>* out) {
  out->assign(n, FetchBuffer());
  std::vector<std::shared_ptr<Entry>> taken(n);
  std::vector<FetchTarget> now;
  std::vector<ReadAhead::Read> ahead;
  bool contiguous = n > 0;
  for (std::size_t k = 1; k < n && contiguous; ++k) contiguous = indices[k] == indices[k - 1] + 1;
  {
    std::lock_guard<std::mutex> lock(reads_.mu());
    if (window_objects_ > 0 && contiguous && served_[indices[0]]) {
      // Asked again for what this pass already served: a new pass (the next epoch, or a loop
      // that broke off and started over). Read-ahead far from its start is dropped.
      std::fill(served_.begin(), served_.end(), 0);
      next_ = indices[0];
      drop_ahead_unless(indices[0], indices[0] + n + window_objects_);
    }
    for (std::size_t k = 0; k < n; ++k) {
      auto it = ahead_.find(indices[k]);
      if (it != ahead_.end()) {
        taken[k] = std::move(it->second);
        ahead_bytes_ -= (*objects_)[indices[k]].size;
        ahead_.erase(it);
        ++hits_;
      }
      if (window_objects_ > 0) served_[indices[k]] = 1;
    }
    // Read ahead only for a batch that continues a sequence: it was itself read ahead, starts
    // a pass (index 0), or is a run of 2+ near the frontier (several workers start at once).
    // A random index alone starts nothing.
    const std::size_t first = contiguous ? indices[0] : 0;
    const bool in_sequence =
        window_objects_ > 0 && contiguous &&
        (taken[0] != nullptr || first == 0 || (n >= 2 && first <= next_ + window_objects_));
    if (in_sequence) ahead = plan_ahead(first, indices[n - 1] + 1);
  }
  for (std::size_t k = 0; k < n; ++k) {
    if (taken[k]) continue;
    (*out)[k] = allocate_((*objects_)[indices[k]].size);
    now.push_back({(*objects_)[indices[k]], (*out)[k].data});
  }

  // This batch's own reads queue first: the read-ahead must not delay what a worker waits on.
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    absl::Status status;
  };
  auto wait = std::make_shared<Wait>();
  if (now.empty()) {
    wait->done = true;
  } else {
    fetcher_->fetch_async(std::move(now), nullptr, [wait](absl::Status status) {
      std::lock_guard<std::mutex> lock(wait->mu);
      wait->status = std::move(status);
      wait->done = true;
      wait->cv.notify_all();
    });
  }
  reads_.start(ahead, kChunk);

  // Objects read ahead: wait for those still in flight; any that failed are read again here,
  // so a transient failure costs a read, and a lasting one is reported by that read.
  std::vector<FetchTarget> again;
  {
    std::unique_lock<std::mutex> lock(reads_.mu());
    for (std::size_t k = 0; k < n; ++k) {
      if (!taken[k]) continue;
      Entry& entry = *taken[k];
      reads_.wait(lock, entry);
      (*out)[k] = entry.buffer;
      if (!entry.status.ok()) again.push_back({(*objects_)[indices[k]], entry.buffer.data});
    }
  }
  absl::Status status;
  if (!again.empty()) status = fetcher_->fetch(std::move(again));
  {
    std::unique_lock<std::mutex> lock(wait->mu);
    wait->cv.wait(lock, [&wait] { return wait->done; });
    if (status.ok()) status = wait->status;
  }
  return status;
}

std::uint64_t MapPrefetcher::hits() const {
  std::lock_guard<std::mutex> lock(reads_.mu());
  return hits_;
}

std::uint64_t MapPrefetcher::dropped() const {
  std::lock_guard<std::mutex> lock(reads_.mu());
  return dropped_;
}

}  // namespace dataflux::internal
