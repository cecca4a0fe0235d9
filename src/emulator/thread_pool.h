// The server's task queue: httplib runs each connection (its whole keep-alive life) as one
// task, so a fixed pool of N threads serves N connections and leaves the next one waiting
// until an idle keep-alive connection times out; a client keeping 256 connections alive
// against 64 threads stalled 5 s at a time. This pool starts a thread whenever a task finds
// none idle, up to `max_threads`, and keeps it for later connections: the library's own
// internal::ThreadPool behind httplib's TaskQueue interface.
#ifndef DATAFLUX_SRC_EMULATOR_THREAD_POOL_H_
#define DATAFLUX_SRC_EMULATOR_THREAD_POOL_H_

#include <httplib.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <system_error>
#include <utility>

#include "core/thread_pool.h"

namespace dataflux::emulator::internal {

class GrowingThreadPool : public httplib::TaskQueue {
 public:
  explicit GrowingThreadPool(std::size_t max_threads)
      : pool_(std::make_unique<dataflux::internal::ThreadPool>(max_threads)) {}

  void enqueue(std::function<void()> fn) override {
    try {
      pool_->run(fn);  // a copy: on failure `fn` is still ours to run
    } catch (const std::system_error&) {
      // No thread could start and nothing was queued: the accepting thread serves it.
      fn();
    }
  }
  // Runs what is queued and joins (the pool's destructor), as httplib's own pool does.
  void shutdown() override { pool_.reset(); }

 private:
  std::unique_ptr<dataflux::internal::ThreadPool> pool_;
};

}  // namespace dataflux::emulator::internal

#endif  // DATAFLUX_SRC_EMULATOR_THREAD_POOL_H_
