// The one way the library runs work off the caller's thread, besides the transport's event loop
// (which carries every network request):
//   - ThreadPool::shared(): CPU work that never blocks (CRC32C, slicing, completion steps);
//   - ThreadPool::blocking(): calls that block and have no asynchronous form (the synchronous
//     ObjectStore calls of listing workers, part uploads, compose batches, local file reads,
//     background checkpoint saves);
//   - TaskGroup / parallel_for: a bounded set of tasks on one of those pools whose wait() runs
//     still-queued tasks on the waiting thread, so a wait never depends on a pool thread that
//     is busy elsewhere (no deadlock when the pool is saturated, nested groups included).
// Both pools are process-wide, start threads only as work arrives (up to a fixed maximum, never
// one per call or request) and are made anew in a child after fork().
#ifndef DATAFLUX_SRC_CORE_THREAD_POOL_H_
#define DATAFLUX_SRC_CORE_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace dataflux::internal {

class ThreadPool {
 public:
  // At most `max_threads` threads, each started when a task arrives and finds none idle.
  explicit ThreadPool(std::size_t max_threads);
  // Runs every task already queued, then joins.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // `task` must not throw. The task runs unless run() throws std::system_error, which it does
  // only when the pool has no thread and cannot start one (then nothing was queued).
  void run(std::function<void()> task);
  // The next `count` thread starts fail as if the system were out of threads.
  static void fail_thread_starts_for_testing(int count);
  std::size_t threads_started() const;
  std::size_t max_threads() const { return max_threads_; }

  static constexpr std::size_t kSharedThreads = 8;
  static constexpr std::size_t kBlockingThreads = 64;
  // CPU work that never waits on I/O or on other tasks.
  static ThreadPool& shared();
  // Synchronous store calls and other blocking work.
  static ThreadPool& blocking();

 private:
  void work();

  // std::mutex rather than absl::Mutex: Debian's Abseil is not built for ThreadSanitizer, which
  // then reports false races, and TSan runs on this code must stay meaningful.
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  std::size_t idle_ = 0;                     // guarded by mu_: threads waiting for a task
  bool stopping_ = false;                    // guarded by mu_
  const std::size_t max_threads_;
  std::vector<std::thread> threads_;  // guarded by mu_
};

// A process-wide pool, made on first use and made again in a child after fork() (the parent's
// threads do not exist there). The pool itself is leaked: tasks may still run during static
// destruction.
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

// Tasks run on `pool`, at most `max_parallel` of them on pool threads at once (0: all on the
// thread that waits). wait() first runs still-queued tasks itself, then waits only for tasks
// already running, each of which is guaranteed to finish and wake it. An exception thrown by a
// task is rethrown by wait() (the first one; the other tasks still run). The destructor waits.
class TaskGroup {
 public:
  TaskGroup(ThreadPool& pool, int max_parallel);
  ~TaskGroup();
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;

  void run(std::function<void()> task);
  // Runs one queued task on the calling thread only when no pool thread is working for this
  // group (the pool is busy elsewhere): a waiter that must not steal work a pool thread is
  // about to take, yet must not wait on a pool that will not come.
  bool run_one_if_stalled();
  void wait();

 private:
  struct State;
  static void drain(const std::shared_ptr<State>& state);
  static bool run_front(State& state);

  ThreadPool& pool_;
  std::shared_ptr<State> state_;  // shared with pool tasks that may start after we are gone
};

// fn(0) ... fn(count - 1) on `pool`, at most `max_parallel` at once counting the calling thread,
// which takes part. Returns the first failure in index order; every index runs regardless.
absl::Status parallel_for(ThreadPool& pool, int count, int max_parallel,
                          const std::function<absl::Status(int)>& fn);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_THREAD_POOL_H_
