// EventLoop: one thread driving one CURLM handle, the unit HttpTransport multiplies by
// TransportOptions::threads.
//
// Admission (limits, FIFO order) is the transport's job: a loop only runs what it is given.
// Other threads post() admitted transfers and timers; curl_multi_wakeup() interrupts the
// loop's curl_multi_poll(). When a transfer ends the loop hands it to Hooks::released (so the
// transport can admit more) and then runs the request's callback, on the loop thread.
//
//   EventLoop loop(options, hooks, /*index=*/0);
//   loop.start();
//   loop.post(std::move(transfer));     // from any thread
//   loop.stop(); loop.join();           // cancels what is left, callbacks included
#ifndef DATAFLUX_SRC_HTTP_EVENT_LOOP_H_
#define DATAFLUX_SRC_HTTP_EVENT_LOOP_H_

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "dataflux/transport.h"
#include "http/curl_transfer.h"

namespace dataflux::internal {

class EventLoop {
 public:
  using Clock = std::chrono::steady_clock;

  struct Hooks {
    // A transfer ended (any outcome) and no longer counts against the limits. Runs on the
    // loop thread before the request's callback.
    std::function<void(const Transfer&)> released;
    // The loop is exiting: the transport fails its own queue (callbacks on this thread).
    std::function<void()> exiting;
  };

  EventLoop(const TransportOptions& options, Hooks hooks, std::size_t index);
  // Stops and joins if still running, then frees the curl handles.
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  void start();
  // Thread-safe. After stop() nothing posted is lost: it is cancelled on the way out.
  void post(std::unique_ptr<Transfer> transfer);
  void post_timer(Clock::time_point when, std::function<void()> fn);
  void stop();
  void join();
  // For a transport destroyed from its own callback: the thread finishes alone, then runs
  // `on_exit` (which may delete this loop). Call from the loop thread itself.
  void detach(std::function<void()> on_exit);
  bool on_loop_thread() const { return std::this_thread::get_id() == thread_id_.load(); }

 private:
  struct Timer {
    Clock::time_point when;
    std::uint64_t sequence;  // equal deadlines run in the order they were posted
    std::function<void()> fn;
    bool operator>(const Timer& other) const {
      return when != other.when ? when > other.when : sequence > other.sequence;
    }
  };
  using TimerHeap = std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>>;

  void run();
  void start_transfer(std::unique_ptr<Transfer> t);
  void drain_messages();
  void check_stalls(Clock::time_point now);
  void run_due_timers(Clock::time_point now);
  int poll_timeout_ms(Clock::time_point now);
  // Removes the transfer from the multi handle, fills its response, releases its limits and
  // runs its callback. `code` is curl's result unless `override_status` says otherwise.
  void complete(Transfer* t, CURLcode code, absl::Status override_status);
  void complete_unstarted(std::unique_ptr<Transfer> t, absl::Status status);
  void shutdown();
  CURL* acquire_easy();
  void release_easy(CURL* easy);

  const TransportOptions options_;
  const Hooks hooks_;
  const std::size_t index_;
  CURLM* multi_ = nullptr;
  std::thread thread_;
  std::function<void()> on_exit_;             // loop thread only
  std::atomic<std::thread::id> thread_id_{};  // set by the thread itself

  std::mutex mu_;  // guards the three fields below; never held while calling out
  bool stop_ = false;
  std::vector<std::unique_ptr<Transfer>> inbox_;
  TimerHeap timers_;
  std::uint64_t timer_sequence_ = 0;

  // Loop thread only.
  std::unordered_map<Transfer*, std::unique_ptr<Transfer>> active_;
  std::vector<CURL*> idle_easy_;
  Clock::time_point next_stall_scan_ = Clock::time_point::max();
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_HTTP_EVENT_LOOP_H_
