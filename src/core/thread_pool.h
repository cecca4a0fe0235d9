// A small fixed-size thread pool for blocking work that has no asynchronous form (local file
// I/O behind ObjectStore's async calls). Network requests never use it: they go to the
// transport's event loop.
#ifndef DATAFLUX_SRC_CORE_THREAD_POOL_H_
#define DATAFLUX_SRC_CORE_THREAD_POOL_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace dataflux::internal {

class ThreadPool {
 public:
  explicit ThreadPool(std::size_t threads);
  // Runs every task already queued, then joins.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void run(std::function<void()> task);

  // A process-wide pool (8 threads), re-created in a child after fork().
  static ThreadPool& shared();

 private:
  void work();

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_THREAD_POOL_H_
