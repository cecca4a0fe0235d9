// Reading object media: range math, response-header parsing, and ReadOperation, the one
// asynchronous state machine behind every read_object variant.
//
// A read asks for [offset + delivered, end) on every attempt, so a transfer that breaks after K
// bytes resumes at K (never from zero, never repeating bytes). The first response's generation
// pins every later attempt. Whole-object reads fold each byte into a CRC32C as it arrives and
// compare it with x-goog-hash (and the caller's expectation) at the end. Retries wait on the
// transport's timers (run_after), so no thread blocks while a read backs off.
//
//   ReadOperation::start(client, request, ReadTarget::into(buffer, capacity),
//                        [](absl::StatusOr<ReadObjectResult> r) { ... });
#ifndef DATAFLUX_SRC_GCS_GCS_READ_H_
#define DATAFLUX_SRC_GCS_GCS_READ_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/byte_range.h"
#include "dataflux/object_store.h"
#include "gcs/gcs_client.h"

namespace dataflux::internal {

// The crc32c in x-goog-hash values ("crc32c=AAAAAA==,md5=..." or one per header line).
std::optional<std::uint32_t> crc32c_from_hash_headers(const std::vector<std::string>& values);

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

class ReadOperation : public std::enable_shared_from_this<ReadOperation> {
 public:
  // Starts the read; `done` runs exactly once, on a transport thread.
  static void start(std::shared_ptr<GcsClient> client, const ReadObjectRequest& request,
                    ReadTarget target, AsyncCallback<ReadObjectResult> done);

  ReadOperation(std::shared_ptr<GcsClient> client, const ReadObjectRequest& request,
                ReadTarget target, AsyncCallback<ReadObjectResult> done);

 private:
  // Re-runs `step` on the shared thread pool when called on a transport loop thread.
  bool moved_off_loop(void (ReadOperation::*step)());
  void attempt();
  void probe_size();  // after a 416: is offset exactly the end (0 bytes) or past it?
  bool on_bytes(const char* data, std::size_t size);
  bool deliver(const char* data, std::size_t size);
  void on_response(HttpResponse response);
  void on_probe_response(HttpResponse response);
  // Waits (on a transport timer) and runs `next` again, or completes with the final error.
  void retry_or_fail(const absl::Status& error,
                     void (ReadOperation::*next)() = &ReadOperation::attempt);
  void complete(absl::StatusOr<ReadObjectResult> result);
  absl::StatusOr<ReadObjectResult> finish_success();

  std::string context() const;
  bool whole_object() const { return request_.offset == 0 && !request_.length; }

  std::shared_ptr<GcsClient> client_;
  ReadObjectRequest request_;
  ReadTarget target_;
  AsyncCallback<ReadObjectResult> done_;
  RetryState retry_;
  bool refreshed_ = false;
  std::string sent_authorization_;  // of the request in flight, to refresh only a stale token

  // Touched by the loop thread of the current attempt only; attempts never overlap.
  std::uint64_t delivered_ = 0;
  std::uint32_t crc_ = 0;
  int attempts_ = 0;
  std::optional<std::int64_t> generation_;
  std::optional<std::uint64_t> object_size_;
  std::optional<std::uint32_t> server_crc32c_;
  bool overflow_ = false;        // more bytes than the buffer holds
  bool too_many_bytes_ = false;  // the server sent past the requested range
  absl::Status sink_error_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_GCS_GCS_READ_H_
