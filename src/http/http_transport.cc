#include "http/http_transport.h"

#include <curl/curl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/absl_view.h"
#include "http/curl_transfer.h"
#include "http/event_loop.h"

namespace dataflux::internal {

std::optional<std::string> HttpResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return std::nullopt;
}

std::vector<std::string> HttpResponse::header_values(std::string_view name) const {
  std::vector<std::string> values;
  for (const auto& [key, value] : headers) {
    if (key == name) values.push_back(value);
  }
  return values;
}

// Admission control lives here, once for all loops: the FIFO queue, the request and byte
// limits, and the choice of the least busy loop. Loops only run what they are handed.
class HttpTransport::Impl {
 public:
  explicit Impl(TransportOptions options) : options_(normalize(options)) {
    static std::once_flag curl_once;
    std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_ALL); });
    EventLoop::Hooks hooks;
    hooks.released = [this](const Transfer& t) { release(t); };
    hooks.exiting = [this] { fail_queue(); };
    for (std::size_t i = 0; i < options_.threads; ++i) {
      loops_.push_back(std::make_unique<EventLoop>(options_, hooks, i));
      loop_load_.push_back(0);
    }
    for (auto& loop : loops_) loop->start();
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    for (auto& loop : loops_) loop->stop();
    for (auto& loop : loops_) loop->join();
    fail_queue();  // normally already empty: every exiting loop drains it
  }

  // True when the caller is one of our loop threads (it cannot join itself).
  bool on_loop_thread() const {
    return std::any_of(loops_.begin(), loops_.end(),
                       [](const auto& loop) { return loop->on_loop_thread(); });
  }

  // Destruction from a callback: joining ourselves would deadlock. Stop everything, join the
  // other loops, and let the current loop thread finish its shutdown once the callback
  // returns and then delete the Impl.
  static void destroy_from_loop_thread(std::unique_ptr<Impl> impl) {
    {
      std::lock_guard<std::mutex> lock(impl->mu_);
      impl->stopping_ = true;
    }
    for (auto& loop : impl->loops_) loop->stop();
    EventLoop* current = nullptr;
    for (auto& loop : impl->loops_) {
      if (loop->on_loop_thread()) {
        current = loop.get();
      } else {
        loop->join();
      }
    }
    Impl* raw = impl.release();
    current->detach([raw] { delete raw; });
  }

  void submit(HttpRequest request, Callback done) {
    auto t = std::make_unique<Transfer>(std::move(request), std::move(done));
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.requests_submitted;
      if (!stopping_) {
        queue_.push_back(std::move(t));
        admit_locked();
        return;
      }
      ++stats_.requests_completed;
      ++stats_.requests_failed;
    }
    // Only during destruction (e.g. a timer resubmitting on the way out).
    HttpResponse response;
    response.status = absl::CancelledError(absl::StrCat(t->context(), ": transport shut down"));
    auto callback = std::move(t->done);
    t.reset();
    if (callback) callback(std::move(response));
  }

  void run_after(absl::Duration delay, std::function<void()> fn) {
    auto when =
        EventLoop::Clock::now() +
        std::chrono::microseconds(absl::ToInt64Microseconds(std::max(delay, absl::ZeroDuration())));
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!stopping_) {
        // One loop for all timers keeps equal deadlines in submission order.
        loops_.front()->post_timer(when, std::move(fn));
        return;
      }
    }
    // Shutting down: pending timers run on the way out, and so does this one, so that work it
    // owns (a retry's callback) still completes exactly once.
    fn();
  }

  const TransportOptions& options() const { return options_; }

  Stats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    Stats s = stats_;
    s.queued = queue_.size();
    return s;
  }

 private:
  static TransportOptions normalize(TransportOptions o) {
    o.threads = std::max<std::size_t>(1, o.threads);
    o.max_requests_in_flight = std::max<std::size_t>(1, o.max_requests_in_flight);
    return o;
  }

  bool fits_budget_locked(std::uint64_t bytes) const {
    const std::uint64_t budget = options_.max_bytes_in_flight;
    const std::uint64_t used = stats_.bytes_in_flight;
    // A request larger than the whole budget would never fit: it runs once nothing else
    // holds budget.
    return bytes == 0 || used == 0 || (used <= budget && bytes <= budget - used);
  }

  // Starts queued requests, oldest first, while the limits allow. Strict FIFO: a large
  // request at the head waits for room rather than being overtaken forever by small ones.
  void admit_locked() {
    while (!stopping_ && !queue_.empty() && stats_.in_flight < options_.max_requests_in_flight &&
           fits_budget_locked(queue_.front()->request.budget_bytes)) {
      std::unique_ptr<Transfer> t = std::move(queue_.front());
      queue_.pop_front();
      auto least = std::min_element(loop_load_.begin(), loop_load_.end());
      t->loop_index = static_cast<std::size_t>(least - loop_load_.begin());
      ++*least;
      ++stats_.in_flight;
      stats_.peak_in_flight = std::max(stats_.peak_in_flight, stats_.in_flight);
      stats_.bytes_in_flight += t->request.budget_bytes;
      // Posted under mu_, so a loop told to stop afterwards still finds it and cancels it.
      loops_[t->loop_index]->post(std::move(t));
    }
  }

  void release(const Transfer& t) {
    std::lock_guard<std::mutex> lock(mu_);
    --stats_.in_flight;
    --loop_load_[t.loop_index];
    stats_.bytes_in_flight -= t.request.budget_bytes;
    ++stats_.requests_completed;
    if (!t.response.status.ok()) ++stats_.requests_failed;
    stats_.bytes_received += t.response.body_bytes;
    stats_.bytes_sent += t.bytes_sent;
    stats_.connections_opened += t.connections_opened;
    admit_locked();
  }

  void fail_queue() {
    std::deque<std::unique_ptr<Transfer>> queued;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queued.swap(queue_);
      stats_.requests_completed += queued.size();
      stats_.requests_failed += queued.size();
    }
    for (auto& t : queued) {
      HttpResponse response;
      response.status = absl::CancelledError(absl::StrCat(t->context(), ": transport shut down"));
      auto callback = std::move(t->done);
      t.reset();
      if (callback) callback(std::move(response));
    }
  }

  const TransportOptions options_;
  mutable std::mutex mu_;
  bool stopping_ = false;
  std::deque<std::unique_ptr<Transfer>> queue_;
  std::vector<std::size_t> loop_load_;  // admitted, unfinished transfers per loop
  Stats stats_;
  std::vector<std::unique_ptr<EventLoop>> loops_;  // last: destroyed (joined) first
};

HttpTransport::HttpTransport(TransportOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpTransport::~HttpTransport() {
  if (impl_ && impl_->on_loop_thread()) Impl::destroy_from_loop_thread(std::move(impl_));
}

namespace {

// The process-wide transport. Never destroyed: loop threads may still run callbacks while
// static destructors run at exit.
struct SharedTransport {
  std::mutex mu;
  std::shared_ptr<HttpTransport> transport;
  pid_t pid = 0;
  // Transports inherited across fork(): their threads do not exist in the child, so they are
  // kept (reachable, never destroyed) rather than joined.
  std::vector<std::shared_ptr<HttpTransport>> orphans;
};

SharedTransport& shared_transport() {
  static SharedTransport* shared = [] {
    auto* s = new SharedTransport();
    // Held across fork() so the child never inherits the mutex mid-update.
    pthread_atfork([] { shared_transport().mu.lock(); }, [] { shared_transport().mu.unlock(); },
                   [] { shared_transport().mu.unlock(); });
    return s;
  }();
  return *shared;
}

}  // namespace

std::shared_ptr<HttpTransport> HttpTransport::instance() {
  SharedTransport& shared = shared_transport();
  std::lock_guard<std::mutex> lock(shared.mu);
  const pid_t pid = getpid();
  if (shared.transport && shared.pid != pid) {
    shared.orphans.push_back(std::move(shared.transport));
  }
  if (!shared.transport) {
    shared.transport = std::make_shared<HttpTransport>();
    shared.pid = pid;
  }
  return shared.transport;
}

void HttpTransport::submit(HttpRequest request, Callback done) {
  impl_->submit(std::move(request), std::move(done));
}

std::future<HttpResponse> HttpTransport::submit(HttpRequest request) {
  auto promise = std::make_shared<std::promise<HttpResponse>>();
  auto future = promise->get_future();
  impl_->submit(std::move(request),
                [promise](HttpResponse response) { promise->set_value(std::move(response)); });
  return future;
}

HttpResponse HttpTransport::send(HttpRequest request) {
  if (impl_->on_loop_thread()) {
    // Waiting here would block the loop that has to produce the answer.
    HttpResponse response;
    response.status = absl::FailedPreconditionError(
        absl::StrCat(request.method, " ", redact_url(request.url),
                     ": HttpTransport::send() called from a loop thread"));
    return response;
  }
  return submit(std::move(request)).get();
}

void HttpTransport::run_after(absl::Duration delay, std::function<void()> fn) {
  impl_->run_after(delay, std::move(fn));
}

bool HttpTransport::on_loop_thread() const { return impl_->on_loop_thread(); }

const TransportOptions& HttpTransport::options() const { return impl_->options(); }

HttpTransport::Stats HttpTransport::stats() const { return impl_->stats(); }

bool same_transport_options(const TransportOptions& a, const TransportOptions& b) {
  return a.max_requests_in_flight == b.max_requests_in_flight &&
         a.max_bytes_in_flight == b.max_bytes_in_flight &&
         a.max_connections_per_host == b.max_connections_per_host && a.threads == b.threads &&
         a.connect_timeout == b.connect_timeout && a.stall_timeout == b.stall_timeout &&
         a.request_timeout == b.request_timeout;
}

TransportHandle::TransportHandle(const TransportOptions& options)
    : options_(options), shared_(same_transport_options(options, TransportOptions{})) {
  transport_ = make();
  current_ = transport_.get();
  pid_ = static_cast<long>(getpid());
}

TransportHandle::TransportHandle(std::shared_ptr<HttpTransport> transport)
    : options_(transport->options()), shared_(false), transport_(std::move(transport)) {
  current_ = transport_.get();
  pid_ = static_cast<long>(getpid());
}

TransportHandle::~TransportHandle() {
  if (pid_.load() != static_cast<long>(getpid())) {
    // Made in the parent and never used here: its threads do not exist; do not join them.
    new std::shared_ptr<HttpTransport>(std::move(transport_));
  }
}

std::shared_ptr<HttpTransport> TransportHandle::make() const {
  return shared_ ? HttpTransport::instance() : std::make_shared<HttpTransport>(options_);
}

HttpTransport& TransportHandle::get() {
  const long pid = static_cast<long>(getpid());
  if (pid_.load(std::memory_order_acquire) == pid) return *current_.load(std::memory_order_acquire);
  std::lock_guard<std::mutex> lock(mu_);
  if (pid_.load() != pid) {
    new std::shared_ptr<HttpTransport>(std::move(transport_));  // the parent's: leaked
    transport_ = make();
    current_.store(transport_.get(), std::memory_order_release);
    pid_.store(pid, std::memory_order_release);
  }
  return *current_.load();
}

std::string redact_url(std::string_view url) {
  const std::size_t q = url.find('?');
  if (q == std::string_view::npos) return std::string(url);
  std::vector<std::string> items;
  for (absl::string_view item : absl::StrSplit(av(url.substr(q + 1)), '&')) {
    const std::size_t eq = item.find('=');
    const std::string name = absl::AsciiStrToLower(item.substr(0, eq));
    const bool secret = name == "upload_id" || name == "uploadid" || name == "access_token" ||
                        name == "key" || absl::EndsWith(name, "signature") ||
                        absl::EndsWith(name, "credential") ||
                        absl::EndsWith(name, "security-token");
    items.push_back(secret && eq != absl::string_view::npos
                        ? absl::StrCat(item.substr(0, eq + 1), "REDACTED")
                        : std::string(item));
  }
  return absl::StrCat(av(url.substr(0, q + 1)), absl::StrJoin(items, "&"));
}

absl::StatusOr<HttpResponse> send_with_retry(
    HttpTransport& transport, const RetryOptions& options, Idempotency idempotency,
    const std::function<absl::StatusOr<HttpRequest>()>& make,
    const std::function<absl::Status(const HttpResponse&)>& check,
    const std::function<bool(const HttpResponse&)>& resend) {
  RetryState retry(options, idempotency);
  std::function<absl::StatusOr<HttpResponse>(int)> attempt =
      [&](int) -> absl::StatusOr<HttpResponse> {
    for (;;) {
      absl::StatusOr<HttpRequest> request = make();
      if (!request.ok()) return request.status();
      request->idempotent = idempotency == Idempotency::kIdempotent;
      request->connect_timeout = retry.remaining();
      if (retry.bounded()) {
        if (retry.remaining() <= absl::ZeroDuration()) {
          return absl::DeadlineExceededError("the time allowed for cleaning up ran out before it");
        }
        request->timeout =
            std::min(request->timeout.value_or(absl::InfiniteDuration()), retry.remaining());
      }
      HttpResponse response = transport.send(*std::move(request));
      if (resend && resend(response)) continue;
      if (auto s = check(response); !s.ok()) return s;
      return response;
    }
  };
  return retry_loop<HttpResponse>(retry, attempt);
}

}  // namespace dataflux::internal
