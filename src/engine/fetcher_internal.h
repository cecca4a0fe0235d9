// The Fetcher's shared state: the admission queue that enforces the request and byte budgets,
// the per-call groups, direct reads (fetcher.cc) and compose batches (compose.cc).
#ifndef DATAFLUX_SRC_ENGINE_FETCHER_INTERNAL_H_
#define DATAFLUX_SRC_ENGINE_FETCHER_INTERNAL_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dataflux/fetch.h"

namespace dataflux::internal {

// One fetch_async call: its targets and how many are still outstanding.
class FetchGroup {
 public:
  FetchGroup(std::vector<FetchTarget> targets,
             std::function<void(std::size_t, const absl::Status&)> on_item,
             std::function<void(absl::Status)> on_done);
  const std::vector<FetchTarget>& targets() const { return targets_; }
  // Records target i's result and runs the callbacks; on_done after the last target.
  void item_done(std::size_t i, const absl::Status& status);

 private:
  std::vector<FetchTarget> targets_;
  std::function<void(std::size_t, const absl::Status&)> on_item_;
  std::function<void(absl::Status)> on_done_;
  std::mutex mu_;
  std::size_t remaining_;     // guarded by mu_
  absl::Status first_error_;  // guarded by mu_
};

// Inside a catch block: Internal, naming what the store threw. A store must report failures
// as statuses; one that throws instead fails the item rather than the process or a wait.
absl::Status thrown_by_store();

class FetcherImpl : public std::enable_shared_from_this<FetcherImpl> {
 public:
  FetcherImpl(std::shared_ptr<ObjectStore> store, std::string bucket, FetchOptions options);

  void fetch_async(std::shared_ptr<FetchGroup> group);
  // Blocks until nothing is queued or running.
  void wait_idle();
  FetchStats stats() const;

  const std::shared_ptr<ObjectStore>& store() const { return store_; }
  const std::string& bucket() const { return bucket_; }

  // Groups the targets into compose batches (each at least two objects) where compose is
  // possible and pays off; the remaining targets are read directly. Exposed for tests.
  std::vector<std::vector<std::size_t>> plan_compose_batches(
      const std::vector<FetchTarget>& targets) const;

 private:
  struct Job {
    std::uint64_t bytes = 0;
    std::function<void()> start;  // must end with release(bytes)
  };

  // Queues a job; it starts when the budgets allow.
  void enqueue(Job job);
  void release(std::uint64_t bytes);
  void pump();

  void read_direct(const std::shared_ptr<FetchGroup>& group, std::size_t i);
  // An object above range_size: parallel ranges into its buffer, each range's CRC32C
  // combined and checked against the listing's when the last one lands.
  void read_ranges(const std::shared_ptr<FetchGroup>& group, std::size_t i);
  // A NotFound for a read pinned to its listed generation: says the object changed since.
  absl::Status explain_gone(const FetchTarget& t, absl::Status status) const;
  // The ranges of one object: their CRC32Cs (combined once the last is in) and first error.
  struct Ranges {
    std::mutex mu;
    std::vector<std::uint32_t> crcs;  // guarded by mu
    std::size_t remaining = 0;        // guarded by mu
    absl::Status first_error;         // guarded by mu
  };
  // One range landed (or failed): checksum it, and finish the object after its last range.
  void range_done(const std::shared_ptr<FetchGroup>& group, std::size_t i,
                  const std::shared_ptr<Ranges>& ranges, std::size_t k, std::uint64_t offset,
                  std::uint64_t length, absl::Status status);
  void compose_batch(const std::shared_ptr<FetchGroup>& group, std::vector<std::size_t> items);
  // The blocking body of a compose batch (on the compose pool); returns the items that must
  // still be read directly.
  std::vector<std::size_t> run_compose(const std::shared_ptr<FetchGroup>& group,
                                       const std::vector<std::size_t>& items);
  bool compose_possible() const;

  const std::shared_ptr<ObjectStore> store_;
  const std::string bucket_;
  const FetchOptions options_;
  const StoreCapabilities capabilities_;

  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::deque<Job> queue_;         // guarded by mu_
  std::size_t requests_ = 0;      // running jobs; guarded by mu_
  std::uint64_t bytes_ = 0;       // bytes of running jobs; guarded by mu_
  std::size_t outstanding_ = 0;   // queued + running jobs; guarded by mu_
  bool compose_refused_ = false;  // the store said no to compose once; guarded by mu_
  FetchStats stats_;              // guarded by mu_
};

// A fresh name under kComposedObjectsPrefix (a random UUID, as the Python connector uses).
std::string unique_composite_name();

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_ENGINE_FETCHER_INTERNAL_H_
