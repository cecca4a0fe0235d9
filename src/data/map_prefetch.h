// MapPrefetcher: read-ahead for a map-style dataset whose batches come in index order.
//
// libtorch's stateless DataLoader hands each worker one batch at a time, and a worker waits for
// the slowest read of its batch before it asks for the next; with a SequentialSampler the next
// batches are predictable, so this reads them ahead. One MapPrefetcher is shared by every copy
// of a MapDataset (the DataLoader copies the dataset into each worker), so the window is one
// for all workers and each object is read once. Batches that are not a contiguous run of
// indices (a RandomSampler) are fetched as asked, with nothing read ahead. Torch-free: buffers
// come from the allocator.
#ifndef DATAFLUX_SRC_DATA_MAP_PREFETCH_H_
#define DATAFLUX_SRC_DATA_MAP_PREFETCH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "dataflux/fetch.h"
#include "engine/read_ahead.h"

namespace dataflux::internal {

class MapPrefetcher {
 public:
  // `objects` outlives the prefetcher. window_objects 0 = no read-ahead.
  MapPrefetcher(std::shared_ptr<Fetcher> fetcher, const std::vector<ObjectEntry>* objects,
                std::size_t window_objects, std::uint64_t window_bytes, FetchAllocator allocate);
  // Waits for the reads still in flight.
  ~MapPrefetcher() = default;
  MapPrefetcher(const MapPrefetcher&) = delete;
  MapPrefetcher& operator=(const MapPrefetcher&) = delete;

  // The buffers of `indices` (each < objects->size()), in order: those read ahead, and the rest
  // fetched now. When the indices are a contiguous ascending run, the objects after it are
  // read ahead for the batches to come. Thread-safe. The first error names the object.
  absl::Status get(const std::size_t* indices, std::size_t n, std::vector<FetchBuffer>* out);

  // Objects read ahead and later handed out, and read ahead but dropped (for tests).
  std::uint64_t hits() const;
  std::uint64_t dropped() const;

 private:
  using Entry = ReadAhead::Slot;

  // Under reads_.mu(): forgets read-ahead outside [from, to).
  void drop_ahead_unless(std::size_t from, std::size_t to);
  // Under reads_.mu(): plans the read-ahead after the contiguous batch [first, end).
  std::vector<ReadAhead::Read> plan_ahead(std::size_t first, std::size_t end);

  const std::shared_ptr<Fetcher> fetcher_;
  const std::vector<ObjectEntry>* const objects_;
  const std::size_t window_objects_;
  const std::uint64_t window_bytes_;
  const FetchAllocator allocate_;

  // Read ahead, not yet handed out, by index; guarded by reads_.mu().
  std::unordered_map<std::size_t, std::shared_ptr<Entry>> ahead_;
  std::uint64_t ahead_bytes_ = 0;  // guarded by reads_.mu()
  std::size_t next_ = 0;           // the read-ahead frontier; guarded by reads_.mu()
  // Indices handed out (or being fetched) in this pass, never read ahead again; a batch that
  // starts at a served index starts a new pass. Guarded by reads_.mu().
  std::vector<std::uint8_t> served_;
  std::uint64_t hits_ = 0;     // guarded by reads_.mu()
  std::uint64_t dropped_ = 0;  // guarded by reads_.mu()
  // Last: destroyed first, waiting for the reads in flight while the rest still exists.
  mutable ReadAhead reads_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_DATA_MAP_PREFETCH_H_
