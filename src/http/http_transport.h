// HttpTransport: one libcurl multi event loop driving many HTTP requests on few threads.
//
// Backends (GCS, S3) build HttpRequests and submit() them; completion arrives as a callback on
// the loop thread (or a future). No thread per request: requests beyond the in-flight limits
// wait in a FIFO queue. Connections are pooled and kept alive between requests.
//
//   auto transport = internal::HttpTransport::instance();
//   internal::HttpRequest req;
//   req.url = "http://127.0.0.1:9023/storage/v1/b/bucket/o";
//   internal::HttpResponse resp = transport->send(std::move(req));
//   if (resp.status.ok() && resp.http_status == 200) use(resp.body);
#ifndef DATAFLUX_SRC_HTTP_HTTP_TRANSPORT_H_
#define DATAFLUX_SRC_HTTP_HTTP_TRANSPORT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/retry_policy.h"
#include "dataflux/transport.h"

namespace dataflux::internal {

struct HttpResponse;

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  // Header lines as (name, value). An empty value sends "Name:" with no value.
  std::vector<std::pair<std::string, std::string>> headers;

  // Request body: `body` when owned, or a view (`body_view`) the caller keeps alive until
  // completion; body_view wins when both are set. No body = no Content-Length for GET/DELETE,
  // "Content-Length: 0" for POST/PUT.
  std::string body;
  std::optional<std::string_view> body_view;

  // Response body destination. When set, every byte of a successful (2xx) response goes here
  // in order, on the loop thread; returning false aborts the transfer (HttpResponse::status
  // becomes Cancelled). Bodies of other responses (error documents) go to HttpResponse::body,
  // up to 64 KiB. When unset, bytes accumulate into HttpResponse::body.
  std::function<bool(const char* data, std::size_t size)> body_sink;
  // With a body_sink: called once, on the loop thread, when a 2xx response's headers are
  // complete and before the sink sees its first byte (or, for an empty body, before `done`),
  // so a caller can validate status and headers before accepting any byte. Returning false
  // aborts the transfer as a sink returning false does.
  // `head` has http_status and headers set, and no body yet.
  std::function<bool(const HttpResponse& head)> on_headers;

  // Without a body_sink: the most bytes the reply may have. A longer one ends the transfer with
  // Internal ("reply exceeds N bytes"), so no server can make the client allocate without
  // limit. JSON pages, XML documents and token replies are far smaller.
  std::size_t max_body_bytes = 64ull << 20;

  // Bytes this request holds in memory while in flight, counted against
  // TransportOptions::max_bytes_in_flight (a request larger than the whole budget still runs,
  // alone). 0 = not counted.
  std::uint64_t budget_bytes = 0;

  // False for a request that must reach the server at most once (a write, compose or delete
  // without a precondition): it goes on a fresh connection, because libcurl silently sends a
  // request again when a reused keep-alive connection turns out to be dead, and the server may
  // already have applied the first copy.
  bool idempotent = true;

  // Overrides TransportOptions::request_timeout / stall_timeout for this request.
  std::optional<absl::Duration> timeout;
  std::optional<absl::Duration> stall_timeout;
  // Cuts TransportOptions::connect_timeout (never raises it): what a retry budget has left.
  std::optional<absl::Duration> connect_timeout;
};

struct HttpResponse {
  // The transport outcome: OK when a complete HTTP response arrived, whatever its status
  // code. Otherwise: Unavailable (connection refused/reset, broken stream), DeadlineExceeded
  // (timeout or stall), Cancelled (sink returned false or the transport shut down),
  // Internal (anything else). The message names the method, URL and curl's error text.
  absl::Status status;
  long http_status = 0;
  // Response headers, names lowercased, in arrival order (a name may repeat, e.g. x-goog-hash).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;              // when the request had no body_sink
  std::uint64_t body_bytes = 0;  // bytes received (to the sink or to body)

  // First value of a header (name in lowercase), or nullopt.
  std::optional<std::string> header(std::string_view name) const;
  // Every value of a header (name in lowercase).
  std::vector<std::string> header_values(std::string_view name) const;
};

// Whether two TransportOptions are the same, to decide whether the shared transport will do.
bool same_transport_options(const TransportOptions& a, const TransportOptions& b);

class HttpTransport {
 public:
  using Callback = std::function<void(HttpResponse)>;

  struct Stats {
    std::uint64_t requests_submitted = 0;
    std::uint64_t requests_completed = 0;  // any outcome
    std::uint64_t requests_failed = 0;     // status not OK
    std::size_t in_flight = 0;
    std::size_t queued = 0;
    std::size_t peak_in_flight = 0;
    std::uint64_t bytes_in_flight = 0;  // budget_bytes of requests in flight
    std::uint64_t bytes_received = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t connections_opened = 0;  // new TCP connections (reuse keeps this low)
  };

  explicit HttpTransport(TransportOptions options = {});
  // Fails every outstanding request with Cancelled (callbacks run) and joins the loop threads.
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // The process-wide transport, created on first use. In a child after fork() it is created
  // anew (the parent's threads do not exist there).
  static std::shared_ptr<HttpTransport> instance();

  // Queues a request; `done` runs exactly once, on a loop thread. It must not block.
  void submit(HttpRequest request, Callback done);
  std::future<HttpResponse> submit(HttpRequest request);
  // Blocking convenience: submit(...).get(). Must not be called from a loop thread.
  HttpResponse send(HttpRequest request);

  // Runs `fn` on a loop thread after `delay` (for retry backoff without blocking a thread).
  void run_after(absl::Duration delay, std::function<void()> fn);

  // Whether the calling thread is one of this transport's loop threads (where nothing may
  // block, e.g. on a token fetch that itself needs the transport).
  bool on_loop_thread() const;

  const TransportOptions& options() const;
  Stats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The transport a client sends on: the process-wide one for default options, else one of its
// own. In a child after fork() the parent's loop threads do not exist, so a request handed to
// the parent's transport would never complete: get() notices the new pid and makes the
// transport again (the parent's is kept, never destroyed, as joining its threads would hang).
class TransportHandle {
 public:
  explicit TransportHandle(const TransportOptions& options);
  // For tests: a given transport, used in this process only.
  explicit TransportHandle(std::shared_ptr<HttpTransport> transport);
  ~TransportHandle();
  TransportHandle(const TransportHandle&) = delete;
  TransportHandle& operator=(const TransportHandle&) = delete;

  HttpTransport& get();

 private:
  std::shared_ptr<HttpTransport> make() const;

  const TransportOptions options_;
  const bool shared_;
  std::mutex mu_;                             // taken only to make the transport again, after fork
  std::shared_ptr<HttpTransport> transport_;  // guarded by mu_
  std::atomic<HttpTransport*> current_{nullptr};
  std::atomic<long> pid_{0};
};

// `url` for messages: the values of query parameters that are capabilities (a resumable
// session's upload_id, S3's uploadId, signed-URL signatures, credentials and tokens) replaced
// with REDACTED.
std::string redact_url(std::string_view url);

// What every GCS and S3 request shares: sends make() (called anew for every attempt, so each has
// fresh headers and a fresh signature) under one RetryState, and returns the first response that
// `check` accepts, or the final error. When `resend` says so of a rejected response (a 401 whose
// token the credentials have just refreshed), the request is made and sent again at once, not
// counted as a failed attempt.
absl::StatusOr<HttpResponse> send_with_retry(
    HttpTransport& transport, const RetryOptions& options, Idempotency idempotency,
    const std::function<absl::StatusOr<HttpRequest>()>& make,
    const std::function<absl::Status(const HttpResponse&)>& check,
    const std::function<bool(const HttpResponse&)>& resend = nullptr);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_HTTP_HTTP_TRANSPORT_H_
