// One HTTP request's life inside the event loop: the request, its easy handle, the response
// being assembled, and the bookkeeping the loop needs for stall detection and limits.
//
// The loop calls configure_transfer() before curl_multi_add_handle() and finish_transfer()
// once curl (or the loop itself, for stalls and shutdown) has ended the transfer.
#ifndef DATAFLUX_SRC_HTTP_CURL_TRANSFER_H_
#define DATAFLUX_SRC_HTTP_CURL_TRANSFER_H_

#include <curl/curl.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "dataflux/transport.h"
#include "http/http_transport.h"

namespace dataflux::internal {

struct Transfer {
  using Clock = std::chrono::steady_clock;

  Transfer(HttpRequest r, HttpTransport::Callback d) : request(std::move(r)), done(std::move(d)) {}
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // "<METHOD> <URL>", the prefix of every error message: never header values (tokens), and
  // the URL with its capabilities redacted (redact_url).
  std::string context() const { return request.method + " " + redact_url(request.url); }
  // Any byte moved in either direction: the stall clock restarts.
  void touch() { last_activity = Clock::now(); }

  HttpRequest request;
  HttpTransport::Callback done;
  HttpResponse response;

  CURL* easy = nullptr;
  curl_slist* header_list = nullptr;
  char error_buffer[CURL_ERROR_SIZE] = {0};

  std::size_t loop_index = 0;                  // the loop this transfer was admitted to
  std::chrono::milliseconds stall_timeout{0};  // 0 = no stall detection
  Clock::time_point last_activity{};
  curl_off_t last_download = 0;  // progress seen by the XFERINFO callback
  curl_off_t last_upload = 0;

  bool sink_aborted = false;    // body_sink returned false
  bool body_too_large = false;  // an accumulated body passed request.max_body_bytes
  bool status_checked = false;  // error_body is known (the first body byte arrived)
  bool error_body = false;      // the response is not 2xx: its body goes to response.body
  bool headers_seen = false;    // request.on_headers has run
  std::string sink_error;       // body_sink threw; what() is kept for the message
  bool stalled = false;         // the loop aborted it for want of progress
  // A connection has been assigned. Before that the transfer may wait in curl's per-host
  // queue, which is not a stall; the stall clock starts when this turns true.
  bool connected = false;

  std::uint64_t bytes_sent = 0;
  std::uint64_t connections_opened = 0;
};

// Sets every option on `t.easy` (a fresh or curl_easy_reset handle) for t.request. An error
// (e.g. a header with a line break) means the request never starts.
absl::Status configure_transfer(Transfer& t, const TransportOptions& options);

// Fills t.response (status, HTTP code) and the counters from curl's result `code`. Stalls
// and shutdown pass the code they want reported through `override_status` instead.
void finish_transfer(Transfer& t, CURLcode code, absl::Status override_status = absl::OkStatus());

// Updates t.connected from curl; true once a connection (new or reused) carries the request.
bool refresh_connected(Transfer& t);

// The Status code for a curl error (Unavailable for broken connections, DeadlineExceeded for
// timeouts, Internal for the rest).
absl::StatusCode status_code_from_curl(CURLcode code);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_HTTP_CURL_TRANSFER_H_
