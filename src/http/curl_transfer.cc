#include "http/curl_transfer.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace dataflux::internal {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  t.touch();
  std::string_view line(data, n);
  // A status line starts a new response: headers of interim responses (100 Continue) or of
  // anything before the final one must not leak into the answer.
  if (line.size() >= 5 && line.substr(0, 5) == "HTTP/") {
    t.response.headers.clear();
    return n;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;  // blank line or obsolete folding
  std::string name(trim(line.substr(0, colon)));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  t.response.headers.emplace_back(std::move(name), std::string(trim(line.substr(colon + 1))));
  return n;
}

constexpr std::size_t kMaxErrorBody = 64 << 10;

// Runs the request's on_headers hook (at most once); false when it rejects the response.
bool accept_headers(Transfer& t, long code) {
  if (!t.request.on_headers || t.headers_seen) return true;
  t.headers_seen = true;
  t.response.http_status = code;
  try {
    if (t.request.on_headers(t.response)) return true;
    t.sink_aborted = true;
  } catch (const std::exception& e) {
    t.sink_error = e.what();
  } catch (...) {
    t.sink_error = "unknown exception";
  }
  return false;
}

std::size_t on_write(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  t.touch();
  if (t.request.body_sink && !t.status_checked) {
    // Headers are complete once the body flows: only a successful response's body is data.
    long code = 0;
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &code);
    t.error_body = code < 200 || code >= 300;
    t.status_checked = true;
    if (!t.error_body && !accept_headers(t, code)) return n == 0 ? 1 : 0;
  }
  if (t.request.body_sink && !t.error_body) {
    // An exception must not unwind through curl's C frames; it ends the transfer instead.
    try {
      if (!t.request.body_sink(data, n)) {
        t.sink_aborted = true;
        return n == 0 ? 1 : 0;
      }
    } catch (const std::exception& e) {
      t.sink_error = e.what();
      return n == 0 ? 1 : 0;
    } catch (...) {
      t.sink_error = "unknown exception";
      return n == 0 ? 1 : 0;
    }
  } else if (!t.request.body_sink) {
    if (n > t.request.max_body_bytes - std::min(t.request.max_body_bytes, t.response.body.size())) {
      t.body_too_large = true;
      return n == 0 ? 1 : 0;
    }
    t.response.body.append(data, n);
  } else {
    // An error document (404, 503...) for a request with a sink: kept in `body` for the
    // message, never handed to the sink, and capped so a hostile server cannot fill memory.
    std::size_t keep = std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, t.response.body.size()));
    t.response.body.append(data, keep);
    return n;
  }
  t.response.body_bytes += n;
  return n;
}

// Uploads from CURLOPT_POSTFIELDS have no read callback, so upload progress is only visible
// here; downloads are also seen by on_write, this keeps the two directions symmetric.
int on_progress(void* user, curl_off_t /*dltotal*/, curl_off_t dlnow, curl_off_t /*ultotal*/,
                curl_off_t ulnow) {
  auto& t = *static_cast<Transfer*>(user);
  if (!t.connected && refresh_connected(t)) t.touch();
  if (dlnow != t.last_download || ulnow != t.last_upload) {
    t.last_download = dlnow;
    t.last_upload = ulnow;
    t.touch();
  }
  return 0;
}

bool has_line_break(std::string_view s) {
  return s.find_first_of("\r\n") != std::string_view::npos;
}

}  // namespace

Transfer::~Transfer() {
  if (header_list != nullptr) curl_slist_free_all(header_list);
}

absl::Status configure_transfer(Transfer& t, const TransportOptions& options) {
  const HttpRequest& req = t.request;
  if (req.url.empty() || has_line_break(req.url) || has_line_break(req.method) ||
      req.method.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(t.context(), ": malformed method or URL"));
  }
  CURL* e = t.easy;
  curl_easy_setopt(e, CURLOPT_URL, req.url.c_str());
  // The path goes out exactly as built: no "/../" or "/./" removal, which would send (and
  // address) an S3 key other than the one named and signed.
  curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
  if (!req.idempotent) {
    // Never replayed: a connection of its own, closed after it rather than left idle in the
    // pool (where each such write would otherwise add one more open connection).
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
  }
  curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.error_buffer);
  // Signals cannot be used from threads; timeouts rely on the multi loop instead.
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  std::int64_t connect_ms = options.connect_timeout.count();
  if (req.connect_timeout) {
    // At least 1 ms: 0 would mean libcurl's own default (300 s), not "no time left".
    connect_ms = std::max<std::int64_t>(
        1, std::min(connect_ms, absl::ToInt64Milliseconds(*req.connect_timeout)));
  }
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_ms));
  std::chrono::milliseconds timeout = options.request_timeout;
  if (req.timeout) {  // at least 1 ms: 0 would mean none
    timeout = std::chrono::milliseconds(
        std::max<std::int64_t>(1, absl::ToInt64Milliseconds(*req.timeout)));
  }
  if (timeout.count() > 0) {
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  }
  t.stall_timeout = options.stall_timeout;
  if (req.stall_timeout) {
    t.stall_timeout = std::chrono::milliseconds(absl::ToInt64Milliseconds(*req.stall_timeout));
  }
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 60L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 30L);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  // Bytes must arrive exactly as stored (CRC32C is computed over them): no decoding.
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, nullptr);
  curl_easy_setopt(e, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  // A redirect from object storage is unexpected; the caller sees the 3xx, not its target.
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);

  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, &on_progress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, &t);

  std::string_view body = req.body_view ? *req.body_view : std::string_view(req.body);
  const std::string& m = req.method;
  const bool sends_body = !body.empty() || m == "POST" || m == "PUT" || m == "PATCH";
  if (m == "HEAD") {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (sends_body) {
    // POSTFIELDS points at the caller's bytes (no copy); CUSTOMREQUEST keeps the verb.
    static const char kEmpty[] = "";
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.empty() ? kEmpty : body.data());
    if (m != "POST") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m.c_str());
  } else if (m == "GET") {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m.c_str());
  }

  bool has_expect = false;
  bool has_content_type = false;
  for (const auto& [name, value] : req.headers) {
    if (name.empty() || has_line_break(name) || has_line_break(value) ||
        name.find(':') != std::string::npos) {
      // Name the header, never its value: values carry tokens.
      return absl::InvalidArgumentError(
          absl::StrCat(t.context(), ": malformed request header '", name, "'"));
    }
    has_expect |= iequals(name, "expect");
    has_content_type |= iequals(name, "content-type");
    // curl drops "Name:" but sends "Name;" as a header with an empty value.
    std::string line = value.empty() ? name + ";" : absl::StrCat(name, ": ", value);
    t.header_list = curl_slist_append(t.header_list, line.c_str());
  }
  // "Expect: 100-continue" costs a round trip per upload; servers we talk to don't need it.
  if (!has_expect) t.header_list = curl_slist_append(t.header_list, "Expect:");
  // curl would label every body as a form post otherwise.
  if (sends_body && !has_content_type) {
    t.header_list = curl_slist_append(t.header_list, "Content-Type:");
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.header_list);
  t.touch();
  return absl::OkStatus();
}

bool refresh_connected(Transfer& t) {
  if (t.connected) return true;
  // curl 7.88 cannot say "queued"; the pre-transfer timestamp is set once a connection (new
  // or reused) is ready and the request is about to go out.
  curl_off_t pretransfer = 0;
  t.connected = curl_easy_getinfo(t.easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer) == CURLE_OK &&
                pretransfer > 0;
  return t.connected;
}

absl::StatusCode status_code_from_curl(CURLcode code) {
  switch (code) {
    case CURLE_OK:
      return absl::StatusCode::kOk;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
      return absl::StatusCode::kUnavailable;
    case CURLE_OPERATION_TIMEDOUT:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      return absl::StatusCode::kInternal;
  }
}

void finish_transfer(Transfer& t, CURLcode code, absl::Status override_status) {
  if (t.easy != nullptr) {  // null when the request never started (shutdown)
    long http_status = 0;
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &http_status);
    t.response.http_status = http_status;
    long connects = 0;
    if (curl_easy_getinfo(t.easy, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects > 0) {
      t.connections_opened = static_cast<std::uint64_t>(connects);
    }
    curl_off_t sent = 0;
    if (curl_easy_getinfo(t.easy, CURLINFO_SIZE_UPLOAD_T, &sent) == CURLE_OK && sent > 0) {
      t.bytes_sent = static_cast<std::uint64_t>(sent);
    }
  }

  // An empty 2xx body never reached on_write: its headers are validated here instead.
  if (code == CURLE_OK && override_status.ok() && t.request.body_sink &&
      t.response.http_status >= 200 && t.response.http_status < 300 &&
      !accept_headers(t, t.response.http_status)) {
    code = CURLE_WRITE_ERROR;
  }
  if (!override_status.ok()) {
    t.response.status = std::move(override_status);
  } else if (code == CURLE_OK) {
    t.response.status = absl::OkStatus();
  } else if (t.body_too_large) {
    t.response.status = absl::InternalError(
        absl::StrCat(t.context(), ": the reply exceeds ", t.request.max_body_bytes,
                     " bytes, the most this request accepts; refused"));
  } else if (t.sink_aborted) {
    t.response.status =
        absl::CancelledError(absl::StrCat(t.context(), ": body sink aborted the transfer"));
  } else if (!t.sink_error.empty()) {
    t.response.status =
        absl::InternalError(absl::StrCat(t.context(), ": body sink threw: ", t.sink_error));
  } else {
    const char* text = t.error_buffer[0] != '\0' ? t.error_buffer : curl_easy_strerror(code);
    t.response.status =
        absl::Status(status_code_from_curl(code), absl::StrCat(t.context(), ": ", text));
  }
}

}  // namespace dataflux::internal
