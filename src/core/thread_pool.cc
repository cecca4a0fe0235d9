#include "core/thread_pool.h"

#include <unistd.h>

#include <atomic>

namespace dataflux::internal {

ThreadPool::ThreadPool(std::size_t threads) {
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::run(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void ThreadPool::work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and nothing left to run
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

ThreadPool& ThreadPool::shared() {
  // The pool is leaked on purpose: tasks may still run during static destruction, and in a
  // forked child the parent's threads do not exist, so the child builds its own.
  static std::atomic<ThreadPool*> pool{nullptr};
  static std::atomic<pid_t> owner{0};
  static std::mutex mu;
  pid_t pid = getpid();
  ThreadPool* current = pool.load(std::memory_order_acquire);
  if (current != nullptr && owner.load(std::memory_order_acquire) == pid) return *current;
  std::lock_guard<std::mutex> lock(mu);
  if (pool.load() == nullptr || owner.load() != pid) {
    pool.store(new ThreadPool(8), std::memory_order_release);
    owner.store(pid, std::memory_order_release);
  }
  return *pool.load();
}

}  // namespace dataflux::internal
