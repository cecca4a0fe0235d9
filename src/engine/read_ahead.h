// ReadAhead: the one prefetch window's machinery, shared by PrefetchStream (a sequential
// consumer) and the datasets' MapPrefetcher (batches by index from several workers).
//
// Reads are started through a Fetcher in chunks (a compose batch at most), each object into a
// Slot whose buffer the caller allocated; a slot turns done (with its status) when its object
// has landed, and whoever takes it waits for that under mu(). Callers keep their own index of
// slots (a deque by position, a map by index) and their own window policy. Destruction waits
// for every read started here, so no callback outlives the buffers it writes.
//
//   ReadAhead ahead(fetcher);
//   auto slot = std::make_shared<ReadAhead::Slot>();
//   slot->buffer = allocate(object.size);
//   ahead.start({{object, slot}}, /*chunk_objects=*/32);
//   std::unique_lock<std::mutex> lock(ahead.mu());
//   ahead.wait(lock, *slot);  // slot->status says how the read went
#ifndef DATAFLUX_SRC_ENGINE_READ_AHEAD_H_
#define DATAFLUX_SRC_ENGINE_READ_AHEAD_H_

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "dataflux/fetch.h"

namespace dataflux::internal {

class ReadAhead {
 public:
  struct Slot {
    FetchBuffer buffer;
    bool done = false;    // guarded by mu()
    absl::Status status;  // guarded by mu(); set when done
  };
  using Read = std::pair<ObjectEntry, std::shared_ptr<Slot>>;

  explicit ReadAhead(std::shared_ptr<Fetcher> fetcher);
  ~ReadAhead();  // waits for the reads still in flight
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Starts `reads` (buffers allocated by the caller, object.size bytes each) in fetches of at
  // most `chunk_objects`. Call without holding mu().
  void start(const std::vector<Read>& reads, std::size_t chunk_objects);
  // Waits until `slot` is done; `lock` holds mu().
  void wait(std::unique_lock<std::mutex>& lock, const Slot& slot);
  std::mutex& mu() { return state_->mu; }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::size_t fetches_in_flight = 0;  // guarded by mu
  };
  std::shared_ptr<Fetcher> fetcher_;
  std::shared_ptr<State> state_;  // shared with the callbacks
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_ENGINE_READ_AHEAD_H_
