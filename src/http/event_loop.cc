#include "http/event_loop.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/log.h"

namespace dataflux::internal {
namespace {

// Upper bound on one curl_multi_poll() wait; curl shortens it to its own timers and
// curl_multi_wakeup() ends it early, so this only bounds how stale a missed case can get.
constexpr std::chrono::milliseconds kMaxPoll{1000};

long limit_or_default(std::size_t value, std::size_t fallback) {
  return static_cast<long>(std::max<std::size_t>(1, value == 0 ? fallback : value));
}

// A throwing callback must not take the loop thread, and every request on it, down with it.
// Its exception has nobody to go to, so it is logged as an error.
template <typename Fn, typename... Args>
void run_guarded(Fn& fn, Args&&... args) {
  try {
    fn(std::forward<Args>(args)...);
  } catch (const std::exception& e) {
    log(LogLevel::kError, absl::StrCat("a completion callback threw (ignored): ", e.what()));
  } catch (...) {
    log(LogLevel::kError, "a completion callback threw (ignored): not a std::exception");
  }
}

}  // namespace

EventLoop::EventLoop(const TransportOptions& options, Hooks hooks, std::size_t index)
    : options_(options), hooks_(std::move(hooks)), index_(index) {
  multi_ = curl_multi_init();
  const long per_host =
      limit_or_default(options_.max_connections_per_host, options_.max_requests_in_flight);
  curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, per_host);
  // The connection cache must hold every connection in use or curl closes idle ones it
  // could have reused on the next request.
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS,
                    std::max(per_host, limit_or_default(options_.max_requests_in_flight, 1)));
}

EventLoop::~EventLoop() {
  if (thread_.joinable()) {
    stop();
    join();
  }
  for (CURL* easy : idle_easy_) curl_easy_cleanup(easy);
  // Cleaning up the multi closes the cached (kept-alive) connections.
  if (multi_ != nullptr) curl_multi_cleanup(multi_);
}

void EventLoop::start() {
  thread_ = std::thread([this] {
    run();
    // Moved out first: it may destroy this loop (a detached loop owns its transport).
    auto on_exit = std::move(on_exit_);
    if (on_exit) on_exit();
  });
}

void EventLoop::post(std::unique_ptr<Transfer> transfer) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox_.push_back(std::move(transfer));
  }
  curl_multi_wakeup(multi_);
}

void EventLoop::post_timer(Clock::time_point when, std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    timers_.push(Timer{when, timer_sequence_++, std::move(fn)});
  }
  curl_multi_wakeup(multi_);
}

void EventLoop::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  curl_multi_wakeup(multi_);
}

void EventLoop::join() {
  if (thread_.joinable()) thread_.join();
}

void EventLoop::detach(std::function<void()> on_exit) {
  on_exit_ = std::move(on_exit);
  if (thread_.joinable()) thread_.detach();
}

void EventLoop::run() {
  thread_id_.store(std::this_thread::get_id());
  for (;;) {
    std::vector<std::unique_ptr<Transfer>> incoming;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) break;
      incoming.swap(inbox_);
    }
    for (auto& t : incoming) start_transfer(std::move(t));
    int running = 0;
    curl_multi_perform(multi_, &running);
    drain_messages();
    auto now = Clock::now();
    check_stalls(now);
    run_due_timers(now);
    curl_multi_poll(multi_, nullptr, 0, poll_timeout_ms(Clock::now()), nullptr);
  }
  shutdown();
}

CURL* EventLoop::acquire_easy() {
  if (idle_easy_.empty()) return curl_easy_init();
  CURL* easy = idle_easy_.back();
  idle_easy_.pop_back();
  return easy;
}

void EventLoop::release_easy(CURL* easy) {
  if (easy == nullptr) return;
  // Reset keeps the handle's allocations; connections live in the multi's cache either way.
  curl_easy_reset(easy);
  if (idle_easy_.size() <
      static_cast<std::size_t>(limit_or_default(options_.max_requests_in_flight, 1))) {
    idle_easy_.push_back(easy);
  } else {
    curl_easy_cleanup(easy);
  }
}

void EventLoop::start_transfer(std::unique_ptr<Transfer> t) {
  t->easy = acquire_easy();
  if (t->easy == nullptr) {
    complete_unstarted(std::move(t), absl::InternalError("curl_easy_init failed"));
    return;
  }
  absl::Status configured = configure_transfer(*t, options_);
  if (!configured.ok()) {
    finish_transfer(*t, CURLE_OK, std::move(configured));
    complete_unstarted(std::move(t), absl::OkStatus());
    return;
  }
  CURLMcode added = curl_multi_add_handle(multi_, t->easy);
  if (added != CURLM_OK) {
    finish_transfer(*t, CURLE_OK,
                    absl::InternalError(absl::StrCat(
                        t->context(), ": curl_multi_add_handle: ", curl_multi_strerror(added))));
    complete_unstarted(std::move(t), absl::OkStatus());
    return;
  }
  if (t->stall_timeout.count() > 0) {
    next_stall_scan_ = std::min(next_stall_scan_, t->last_activity + t->stall_timeout);
  }
  Transfer* key = t.get();
  active_.emplace(key, std::move(t));
}

void EventLoop::drain_messages() {
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    Transfer* t = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
    CURLcode code = msg->data.result;  // msg is invalid once the handle is removed
    if (t != nullptr) complete(t, code, absl::OkStatus());
  }
}

void EventLoop::check_stalls(Clock::time_point now) {
  if (now < next_stall_scan_) return;
  // The earliest deadline can only move later (activity pushes it out), so one scan per
  // deadline is enough rather than one per loop iteration.
  next_stall_scan_ = Clock::time_point::max();
  std::vector<Transfer*> stalled;
  for (auto& [key, t] : active_) {
    if (t->stall_timeout.count() <= 0) continue;
    auto deadline = t->last_activity + t->stall_timeout;
    if (now >= deadline && !t->connected) {
      // Waiting for a connection (curl's per-host queue) or connecting: not a stall; the
      // connect timeout bounds the latter. The clock restarts once a connection is assigned.
      // Either way the clock restarts now: when the connection arrived is unknown here.
      refresh_connected(*t);
      t->touch();
      deadline = t->last_activity + t->stall_timeout;
    }
    if (now >= deadline) {
      stalled.push_back(key);
    } else {
      next_stall_scan_ = std::min(next_stall_scan_, deadline);
    }
  }
  for (Transfer* t : stalled) {
    t->stalled = true;
    complete(t, CURLE_ABORTED_BY_CALLBACK,
             absl::DeadlineExceededError(absl::StrCat(t->context(), ": stalled: no data for ",
                                                      t->stall_timeout.count(), "ms")));
  }
}

void EventLoop::run_due_timers(Clock::time_point now) {
  for (;;) {
    std::function<void()> fn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (timers_.empty() || timers_.top().when > now) return;
      // priority_queue::top() is const; the function is moved out before pop() discards it.
      fn = std::move(const_cast<Timer&>(timers_.top()).fn);
      timers_.pop();
    }
    run_guarded(fn);
  }
}

int EventLoop::poll_timeout_ms(Clock::time_point now) {
  Clock::time_point next = now + kMaxPoll;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!timers_.empty()) next = std::min(next, timers_.top().when);
  }
  next = std::min(next, next_stall_scan_);
  if (next <= now) return 0;
  // Round up: waking a fraction of a millisecond early would spin until the deadline.
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now);
  return static_cast<int>(wait.count());
}

void EventLoop::complete(Transfer* key, CURLcode code, absl::Status override_status) {
  auto it = active_.find(key);
  if (it == active_.end()) return;
  std::unique_ptr<Transfer> t = std::move(it->second);
  active_.erase(it);
  curl_multi_remove_handle(multi_, t->easy);
  finish_transfer(*t, code, std::move(override_status));
  complete_unstarted(std::move(t), absl::OkStatus());
}

void EventLoop::complete_unstarted(std::unique_ptr<Transfer> t, absl::Status status) {
  if (!status.ok()) t->response.status = std::move(status);
  release_easy(t->easy);
  t->easy = nullptr;
  hooks_.released(*t);
  HttpTransport::Callback done = std::move(t->done);
  HttpResponse response = std::move(t->response);
  // The request (and any view or sink it holds) is gone before the caller hears back, so the
  // callback may free what the request pointed at.
  t.reset();
  if (done) run_guarded(done, std::move(response));
}

void EventLoop::shutdown() {
  // Timers first: a retry waiting on backoff resubmits, and that submit fails at once, so
  // its caller still hears back exactly once.
  for (;;) {
    TimerHeap timers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      timers.swap(timers_);
    }
    if (timers.empty()) break;
    while (!timers.empty()) {
      auto fn = std::move(const_cast<Timer&>(timers.top()).fn);
      timers.pop();
      run_guarded(fn);
    }
  }
  std::vector<Transfer*> active;
  for (auto& entry : active_) active.push_back(entry.first);
  for (Transfer* t : active) {
    complete(t, CURLE_OK,
             absl::CancelledError(absl::StrCat(t->context(), ": transport shut down")));
  }
  std::vector<std::unique_ptr<Transfer>> incoming;
  {
    std::lock_guard<std::mutex> lock(mu_);
    incoming.swap(inbox_);
  }
  for (auto& t : incoming) {
    auto status = absl::CancelledError(absl::StrCat(t->context(), ": transport shut down"));
    complete_unstarted(std::move(t), std::move(status));
  }
  hooks_.exiting();
}

}  // namespace dataflux::internal
