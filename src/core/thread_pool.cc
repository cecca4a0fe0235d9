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

ThreadPool& ProcessThreadPool::get() {
  const long pid = static_cast<long>(getpid());
  ThreadPool* current = pool_.load(std::memory_order_acquire);
  if (current != nullptr && owner_.load(std::memory_order_acquire) == pid) return *current;
  std::lock_guard<std::mutex> lock(mu_);
  if (pool_.load() == nullptr || owner_.load() != pid) {
    // In a child, the parent's pool (and its mutex state) is abandoned, not destroyed.
    pool_.store(new ThreadPool(threads_), std::memory_order_release);
    owner_.store(pid, std::memory_order_release);
  }
  return *pool_.load();
}

ThreadPool& ThreadPool::shared() {
  static auto* pool = new ProcessThreadPool(8);
  return pool->get();
}

}  // namespace dataflux::internal
