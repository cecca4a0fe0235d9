// S3ReadOperation: the asynchronous state machine behind every S3 read_object variant.
//
// Every attempt asks for [offset + delivered, end), so a transfer that breaks after K bytes
// resumes at K and never repeats a byte. The first response's ETag pins later attempts
// (If-Match), so a resume never splices two versions of an object: an overwrite in between
// fails the read with FailedPrecondition. Whole-object reads ask for the stored checksum
// (x-amz-checksum-mode) and compare a full-object x-amz-checksum-crc32c, and the caller's
// expected CRC32C, with the bytes. Retries wait on transport timers; no thread blocks.
//
//   S3ReadOperation::start(client, request, buffer, capacity, nullptr, done);
#ifndef DATAFLUX_SRC_S3_S3_READ_H_
#define DATAFLUX_SRC_S3_S3_READ_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "dataflux/object_store.h"
#include "s3/s3_client.h"

namespace dataflux::internal {

// A full-object CRC32C from x-amz-checksum-crc32c; nullopt for composite (multipart
// "...-N") values and for anything malformed.
std::optional<std::uint32_t> full_object_crc32c(const HttpResponse& response);

class S3ReadOperation : public std::enable_shared_from_this<S3ReadOperation> {
 public:
  // Bytes go to `buffer` (up to `capacity`) or, when `sink` is set, to the sink. `done` runs
  // exactly once, on a transport thread.
  static void start(std::shared_ptr<S3Client> client, const ReadObjectRequest& request,
                    char* buffer, std::size_t capacity, ByteSink sink,
                    AsyncCallback<ReadObjectResult> done);

  S3ReadOperation(std::shared_ptr<S3Client> client, const ReadObjectRequest& request, char* buffer,
                  std::size_t capacity, ByteSink sink, AsyncCallback<ReadObjectResult> done);

 private:
  void attempt();
  void probe_size();  // after a 416 or for a zero-length read: HEAD for the size
  bool deliver(const char* data, std::size_t size);
  void on_response(HttpResponse response);
  void on_probe_response(HttpResponse response);
  void retry_or_fail(const absl::Status& error,
                     void (S3ReadOperation::*next)() = &S3ReadOperation::attempt);
  void complete(absl::StatusOr<ReadObjectResult> result);
  absl::StatusOr<ReadObjectResult> finish_success();
  std::string context() const;
  bool whole_object() const { return request_.offset == 0 && !request_.length; }

  std::shared_ptr<S3Client> client_;
  ReadObjectRequest request_;
  char* buffer_;
  std::size_t capacity_;
  ByteSink sink_;
  AsyncCallback<ReadObjectResult> done_;
  RetryState retry_;

  // Touched by the loop thread of the current attempt only; attempts never overlap.
  std::uint64_t delivered_ = 0;
  std::uint64_t attempt_start_ = 0;  // delivered_ when the current attempt began
  std::uint32_t crc_ = 0;
  int attempts_ = 0;
  std::string etag_;  // pins resumes to the version first read
  std::optional<std::uint64_t> object_size_;
  std::optional<std::uint32_t> server_crc32c_;
  bool overflow_ = false;
  bool too_many_bytes_ = false;
  absl::Status sink_error_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_S3_S3_READ_H_
