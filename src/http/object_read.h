// ObjectRead: the one read state machine behind every HTTP backend's read_object.
//
// Every attempt asks for [offset + delivered, end), so a transfer that breaks after K bytes
// resumes at K: never from zero, never repeating a byte. Before any byte of a response reaches
// the caller, its status and headers are checked against what was asked:
//   - a 206 must start exactly at the byte asked for, and its Content-Length must match its
//     Content-Range; otherwise it is retried, and the final error says what came back;
//   - a 200 to a ranged request (a server that ignored Range) is the object from byte 0: the
//     bytes before the one asked for are discarded, never delivered;
//   - a body longer than asked is cut where the request ends;
//   - the object's version must be the one the first response named (generation or ETag);
//   - a body that is not the stored bytes (GCS decompressive transcoding) is refused.
// Whole-object reads fold every byte into a CRC32C, checked at the end against the server's
// and the caller's. Retries wait on transport timers, so no thread blocks while a read backs
// off; an attempt that delivered bytes resets the attempt count (it has not failed), and the
// deadline still bounds the whole read. Backends supply only what differs, as a ReadProtocol:
// the request (URL, headers, pinning), what response headers mean, and error parsing.
//
//   ObjectRead::start(std::make_shared<GcsReadProtocol>(client), request,
//                     ReadTarget::into(buffer, capacity),
//                     [](absl::StatusOr<ReadObjectResult> r) { ... });
#ifndef DATAFLUX_SRC_HTTP_OBJECT_READ_H_
#define DATAFLUX_SRC_HTTP_OBJECT_READ_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/retry_policy.h"
#include "dataflux/object_store.h"
#include "http/http_transport.h"

namespace dataflux::internal {

// Where a read's bytes go: a caller's buffer or a sink.
struct ReadTarget {
  char* buffer = nullptr;
  std::size_t capacity = 0;
  ByteSink sink;
  static ReadTarget into(char* buffer, std::size_t capacity) {
    ReadTarget t;
    t.buffer = buffer;
    t.capacity = capacity;
    return t;
  }
  static ReadTarget to(ByteSink sink) {
    ReadTarget t;
    t.sink = std::move(sink);
    return t;
  }
};

// The version of an object a read is pinned to: set from the request, else from the first
// response that names one, and sent on every later attempt.
struct ReadPin {
  std::optional<std::int64_t> generation;  // GCS
  std::string etag;                        // S3 (If-Match)
};

// What a successful media response's headers say about the object.
struct MediaHeaders {
  ReadPin version;                           // the version this response serves
  std::optional<std::uint64_t> stored_size;  // the object's size as stored, when reported
  std::optional<std::uint32_t> crc32c;       // the whole stored object's CRC32C, when reported
  // Non-empty when the body is not the stored bytes (decompressive transcoding): why.
  std::string not_as_stored;
};

// What a size request (metadata GET, HEAD) answered.
struct ObjectSize {
  std::uint64_t size = 0;
  ReadPin version;
  std::optional<std::uint32_t> crc32c;
};

// What a backend supplies to ObjectRead.
class ReadProtocol {
 public:
  virtual ~ReadProtocol() = default;
  virtual HttpTransport& transport() = 0;
  virtual const RetryOptions& retry_options() const = 0;
  // "gs://bucket/object", for messages.
  virtual std::string url(const ReadObjectRequest& request) const = 0;
  // What the backend refuses before any request (S3 has no generations).
  virtual absl::Status validate(const ReadObjectRequest& /*request*/) const {
    return absl::OkStatus();
  }
  // Whether building a request may block (a token fetch through the transport), so that it
  // must not run on a transport loop thread.
  virtual bool may_block() const { return false; }
  // The media GET for `range` (a Range header value; nullopt = the whole object), pinned to
  // `pin`. `whole_checked`: the whole object is read and its CRC32C will be checked.
  virtual absl::StatusOr<HttpRequest> media_request(const ReadObjectRequest& request,
                                                    const ReadPin& pin,
                                                    const std::optional<std::string>& range,
                                                    bool whole_checked) = 0;
  virtual MediaHeaders parse_media_headers(const HttpResponse& head, bool whole_object) const = 0;
  // A request for the object's size, sent when a read starts at or past the end (416, or a
  // zero-length read), and the parse of its answer.
  virtual absl::StatusOr<HttpRequest> size_request(const ReadObjectRequest& request,
                                                   const ReadPin& pin) = 0;
  virtual absl::StatusOr<ObjectSize> parse_size(const HttpResponse& response,
                                                const ReadObjectRequest& request,
                                                std::string_view context) const = 0;
  // OK for a complete 2xx response; else the transport error or the HTTP error with the
  // server's message, prefixed with `context`.
  virtual absl::Status check(const HttpResponse& response, std::string_view context) const = 0;
  // Whether a failed response to a pinned request means the pinned version is gone.
  virtual bool version_gone(const HttpResponse& /*response*/, const ReadPin& /*pin*/) const {
    return false;
  }
  // After a 401 to a request that carried `sent_authorization`: refreshes the credentials and
  // says whether one more attempt is worth it (once per read, tracked in *refreshed).
  virtual bool refresh_after_unauthorized(const HttpResponse& /*response*/,
                                          std::string_view /*sent_authorization*/,
                                          bool* /*refreshed*/) {
    return false;
  }
};

class ObjectRead : public std::enable_shared_from_this<ObjectRead> {
 public:
  // Starts the read; `done` runs exactly once, on a transport thread.
  static void start(std::shared_ptr<ReadProtocol> protocol, const ReadObjectRequest& request,
                    ReadTarget target, AsyncCallback<ReadObjectResult> done);
  // The blocking form: waits for start()'s result. Not on a transport loop thread.
  static absl::StatusOr<ReadObjectResult> run(std::shared_ptr<ReadProtocol> protocol,
                                              const ReadObjectRequest& request, ReadTarget target);

  ObjectRead(std::shared_ptr<ReadProtocol> protocol, const ReadObjectRequest& request,
             ReadTarget target, AsyncCallback<ReadObjectResult> done);

 private:
  using Step = void (ObjectRead::*)();
  // Re-runs `step` on the blocking pool when the protocol may block and this is a loop thread.
  bool moved_off_loop(Step step);
  // FailedPrecondition: the pinned version is gone (`now`: the live version, when known).
  absl::Status version_changed(const std::string& now) const;
  void attempt();
  void probe_size();
  bool on_headers(const HttpResponse& head);
  bool on_bytes(const char* data, std::size_t size);
  bool deliver(const char* data, std::size_t size);
  void on_response(HttpResponse response);
  void on_probe_response(HttpResponse response);
  // Waits (on a transport timer) and runs `next` again, or completes with the final error.
  void retry_or_fail(const absl::Status& error, Step next = &ObjectRead::attempt);
  void complete(absl::StatusOr<ReadObjectResult> result);
  absl::StatusOr<ReadObjectResult> finish_success();
  // Rejects the response in flight: its bytes are never delivered.
  bool reject(absl::Status status);

  std::string context() const;
  bool whole_object() const { return request_.offset == 0 && !request_.length; }
  std::uint64_t position() const { return request_.offset + delivered_; }  // next byte wanted
  std::optional<std::uint64_t> end() const;  // one past the last byte wanted, when known

  std::shared_ptr<ReadProtocol> protocol_;
  ReadObjectRequest request_;
  ReadTarget target_;
  AsyncCallback<ReadObjectResult> done_;
  RetryState retry_;
  bool refreshed_ = false;
  std::string sent_authorization_;  // of the request in flight, to refresh only a stale token

  // Touched by the loop thread of the current attempt only; attempts never overlap.
  std::uint64_t delivered_ = 0;
  std::uint64_t attempt_start_ = 0;  // delivered_ when the current attempt began
  std::uint32_t crc_ = 0;
  int attempts_ = 0;
  ReadPin pin_;
  std::optional<std::uint64_t> object_size_;
  std::optional<std::uint32_t> server_crc32c_;
  // Per attempt.
  std::uint64_t skip_ = 0;   // bytes of this body before the one asked for (Range ignored)
  bool have_all_ = false;    // every byte asked for is delivered; the rest of the body is not
  bool overflow_ = false;    // more bytes than the buffer holds
  absl::Status rejected_;    // why this response's bytes are refused
  absl::Status sink_error_;  // the caller's sink failed
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_HTTP_OBJECT_READ_H_
