// A small fixed-size thread pool for blocking work that has no asynchronous form (local file
// I/O behind ObjectStore's async calls). Network requests never use it: they go to the
// transport's event loop.
#ifndef DATAFLUX_SRC_CORE_THREAD_POOL_H_
#define DATAFLUX_SRC_CORE_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

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

  // std::mutex rather than absl::Mutex: Debian's Abseil is not built for ThreadSanitizer, which
  // then reports false races, and TSan runs on this code must stay meaningful.
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;
};

// A process-wide pool of `threads` threads, made on first use and made again in a child after
// fork() (the parent's threads do not exist there). Declare one as a function-local static
// for each kind of work that must not wait behind another kind (ThreadPool::shared() is one).
// The pool itself is leaked: tasks may still run during static destruction.
class ProcessThreadPool {
 public:
  explicit ProcessThreadPool(std::size_t threads) : threads_(threads) {}
  ThreadPool& get();

 private:
  const std::size_t threads_;
  std::atomic<ThreadPool*> pool_{nullptr};
  std::atomic<long> owner_{0};  // the pid that made pool_
  std::mutex mu_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_THREAD_POOL_H_
