// The server's task queue: httplib runs each connection (its whole keep-alive life) as one
// task, so a fixed pool of N threads serves N connections and leaves the next one waiting
// until an idle keep-alive connection times out; a client keeping 256 connections alive
// against 64 threads stalled 5 s at a time. This pool starts a thread whenever a task finds
// none idle, up to `max_threads`, and keeps it for later connections.
#ifndef DATAFLUX_SRC_EMULATOR_THREAD_POOL_H_
#define DATAFLUX_SRC_EMULATOR_THREAD_POOL_H_

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dataflux::emulator::internal {

class GrowingThreadPool : public httplib::TaskQueue {
 public:
  explicit GrowingThreadPool(std::size_t max_threads) : max_threads_(max_threads) {}
  ~GrowingThreadPool() override { shutdown(); }
  GrowingThreadPool(const GrowingThreadPool&) = delete;
  GrowingThreadPool& operator=(const GrowingThreadPool&) = delete;

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shutdown_) return;
      jobs_.push_back(std::move(fn));
      // Every queued job beyond the idle threads gets a thread of its own while there is room.
      if (jobs_.size() > idle_ && threads_.size() < max_threads_) {
        threads_.emplace_back([this] { work(); });
      }
    }
    cv_.notify_one();
  }

  void shutdown() override {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (auto& thread : threads) thread.join();
  }

  std::size_t threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_.size();
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [this] { return shutdown_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // shut down with nothing left to run
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  const std::size_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  std::vector<std::thread> threads_;        // guarded by mu_
  std::size_t idle_ = 0;                    // threads waiting for a job; guarded by mu_
  bool shutdown_ = false;                   // guarded by mu_
};

}  // namespace dataflux::emulator::internal

#endif  // DATAFLUX_SRC_EMULATOR_THREAD_POOL_H_
