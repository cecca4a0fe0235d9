#include "s3/s3_read.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/byte_range.h"
#include "core/read_checks.h"
#include "dataflux/crc32c.h"

namespace dataflux::internal {
std::optional<std::uint32_t> full_object_crc32c(const HttpResponse& response) {
  auto value = response.header("x-amz-checksum-crc32c");
  if (!value) return std::nullopt;
  if (auto type = response.header("x-amz-checksum-type"); type && *type == "COMPOSITE") {
    return std::nullopt;
  }
  if (value->find('-') != std::string::npos) return std::nullopt;  // checksum of checksums
  return crc32c_from_base64(*value);
}

void S3ReadOperation::start(std::shared_ptr<S3Client> client, const ReadObjectRequest& request,
                            char* buffer, std::size_t capacity, ByteSink sink,
                            AsyncCallback<ReadObjectResult> done) {
  std::string context = absl::StrCat("GET ", s3_url(request.bucket, request.object));
  absl::Status invalid;
  if (buffer == nullptr && !sink && capacity > 0) {
    invalid = absl::InvalidArgumentError(absl::StrCat(context, ": null buffer"));
  } else if (request.length && !sink && *request.length > capacity) {
    invalid = absl::InvalidArgumentError(absl::StrCat(
        context, ": ", *request.length, " bytes requested but the buffer holds only ", capacity));
  } else if (request.length && *request.length > UINT64_MAX - request.offset) {
    invalid = absl::InvalidArgumentError(absl::StrCat(context, ": offset + length overflows"));
  } else if (request.generation && *request.generation != 0) {
    invalid = absl::InvalidArgumentError(
        absl::StrCat(context, ": S3 objects have no generations (generation ", *request.generation,
                     " was requested)"));
  }
  if (!invalid.ok()) {
    client->transport().run_after(absl::ZeroDuration(),
                                  [done = std::move(done), invalid] { done(invalid); });
    return;
  }
  auto op = std::make_shared<S3ReadOperation>(std::move(client), request, buffer, capacity,
                                              std::move(sink), std::move(done));
  if (request.length && *request.length == 0) {
    op->probe_size();
  } else {
    op->attempt();
  }
}

S3ReadOperation::S3ReadOperation(std::shared_ptr<S3Client> client, const ReadObjectRequest& request,
                                 char* buffer, std::size_t capacity, ByteSink sink,
                                 AsyncCallback<ReadObjectResult> done)
    : client_(std::move(client)),
      request_(request),
      buffer_(buffer),
      capacity_(capacity),
      sink_(std::move(sink)),
      done_(std::move(done)),
      retry_(client_->options().retry, Idempotency::kIdempotent) {}

std::string S3ReadOperation::context() const {
  return absl::StrCat("GET ", s3_url(request_.bucket, request_.object));
}

void S3ReadOperation::attempt() {
  ++attempts_;
  overflow_ = false;
  too_many_bytes_ = false;
  attempt_start_ = delivered_;
  S3Call call;
  call.method = "GET";
  call.bucket = request_.bucket;
  call.key = request_.object;
  if (auto range = read_range_header(request_.offset, request_.length, delivered_)) {
    call.headers.emplace_back("Range", *std::move(range));
  }
  if (!etag_.empty()) call.headers.emplace_back("If-Match", etag_);
  if (whole_object() && request_.verify_crc32c) {
    call.headers.emplace_back("x-amz-checksum-mode", "ENABLED");
  }
  HttpRequest request = client_->new_request(call);
  auto self = shared_from_this();
  request.body_sink = [self](const char* data, std::size_t size) {
    return self->deliver(data, size);
  };
  client_->transport().submit(std::move(request), [self](HttpResponse response) {
    self->on_response(std::move(response));
  });
}

// Only bodies of 2xx responses reach here; error documents stay in HttpResponse::body.
bool S3ReadOperation::deliver(const char* data, std::size_t size) {
  if (request_.length && delivered_ + size > *request_.length) {
    too_many_bytes_ = true;
    return false;
  }
  if (sink_) {
    absl::Status s = sink_(data, size);
    if (!s.ok()) {
      sink_error_ = std::move(s);
      return false;
    }
  } else {
    if (delivered_ + size > capacity_) {
      overflow_ = true;
      return false;
    }
    std::memcpy(buffer_ + delivered_, data, size);
  }
  if (whole_object() && request_.verify_crc32c) crc_ = crc32c_extend(crc_, data, size);
  delivered_ += size;
  return true;
}

void S3ReadOperation::on_response(HttpResponse response) {
  const bool success = response.http_status >= 200 && response.http_status < 300;
  if (success) {
    if (etag_.empty()) etag_ = response.header("etag").value_or("");
    if (auto range = response.header("content-range")) {
      object_size_ = total_from_content_range(*range);
    } else if (auto length = response.header("content-length");
               length && response.http_status == 200 && attempt_start_ == 0 && whole_object()) {
      object_size_ = parse_decimal_u64(*length);  // no Range was sent: the whole object
    }
    if (whole_object()) {
      if (auto crc = full_object_crc32c(response)) server_crc32c_ = crc;
    }
  }
  if (overflow_) {
    std::string size_note =
        object_size_ ? absl::StrCat(" (the object has ", *object_size_, " bytes)") : "";
    return complete(absl::InvalidArgumentError(
        absl::StrCat(context(), ": reading from offset ", request_.offset,
                     " needs more than the buffer's ", capacity_, " bytes", size_note)));
  }
  if (too_many_bytes_) {
    return complete(absl::InternalError(absl::StrCat(context(), ": the server sent more than the ",
                                                     *request_.length, " bytes requested")));
  }
  if (!sink_error_.ok()) return complete(sink_error_);
  if (response.status.ok() && response.http_status == 416 && delivered_ == 0) {
    return probe_size();
  }
  if (response.status.ok() && response.http_status == 412 && !etag_.empty()) {
    return complete(absl::FailedPreconditionError(
        absl::StrCat(context(), ": the object changed while it was being read (ETag ", etag_,
                     " no longer matches after ", delivered_, " bytes)")));
  }
  if (auto s = client_->check(response, context()); !s.ok()) return retry_or_fail(s);
  if (response.http_status == 200 && request_.offset + attempt_start_ > 0 &&
      !response.header("content-range")) {
    // A server that ignored the Range of a resume sent the object from byte 0 again.
    return complete(absl::InternalError(
        absl::StrCat(context(), ": the server ignored the Range header of a resumed read")));
  }

  std::uint64_t want = delivered_;
  if (object_size_) {
    std::uint64_t available = *object_size_ > request_.offset ? *object_size_ - request_.offset : 0;
    want = request_.length ? std::min(*request_.length, available) : available;
  } else if (request_.length) {
    want = *request_.length;
  }
  if (delivered_ < want) {
    return retry_or_fail(absl::UnavailableError(
        absl::StrCat(context(), ": response ended after ", delivered_, " of ", want, " bytes")));
  }
  complete(finish_success());
}

absl::StatusOr<ReadObjectResult> S3ReadOperation::finish_success() {
  ReadObjectResult result;
  result.bytes = delivered_;
  result.object_size = object_size_.value_or(request_.offset + delivered_);
  result.crc32c = server_crc32c_;
  result.attempts = attempts_;
  if (whole_object() && request_.verify_crc32c) {
    if (auto s = check_whole_object_crc32c(context(), delivered_, crc_, server_crc32c_,
                                           request_.expected_crc32c);
        !s.ok()) {
      return s;
    }
    result.crc32c_verified = server_crc32c_.has_value() || request_.expected_crc32c.has_value();
  }
  return result;
}

void S3ReadOperation::probe_size() {
  ++attempts_;
  S3Call call;
  call.method = "HEAD";
  call.bucket = request_.bucket;
  call.key = request_.object;
  auto self = shared_from_this();
  client_->transport().submit(client_->new_request(call), [self](HttpResponse response) {
    self->on_probe_response(std::move(response));
  });
}

void S3ReadOperation::on_probe_response(HttpResponse response) {
  if (auto s = client_->check(response, context()); !s.ok()) {
    return retry_or_fail(s, &S3ReadOperation::probe_size);
  }
  auto size = parse_decimal_u64(response.header("content-length").value_or(""));
  if (!size) {
    return complete(
        absl::InternalError(absl::StrCat(context(), ": HEAD returned no Content-Length")));
  }
  if (request_.offset > *size) {
    return complete(
        absl::OutOfRangeError(absl::StrCat(context(), ": offset ", request_.offset,
                                           " is past the end of the object (", *size, " bytes)")));
  }
  if (request_.offset < *size && !(request_.length && *request_.length == 0)) {
    // A 416 for a range that exists: the object changed in between; try again.
    return retry_or_fail(absl::UnavailableError(
        absl::StrCat(context(), ": range not satisfiable for a ", *size, "-byte object")));
  }
  ReadObjectResult result;
  result.object_size = *size;
  result.attempts = attempts_;
  complete(result);
}

void S3ReadOperation::retry_or_fail(const absl::Status& error, void (S3ReadOperation::*next)()) {
  auto delay = retry_.on_failure(error);
  if (!delay) return complete(retry_.final_error(error));
  auto self = shared_from_this();
  client_->transport().run_after(*delay, [self, next] { ((*self).*next)(); });
}

void S3ReadOperation::complete(absl::StatusOr<ReadObjectResult> result) {
  auto done = std::move(done_);
  done_ = nullptr;
  if (done) done(std::move(result));
}

}  // namespace dataflux::internal
