#include "http/object_read.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/byte_range.h"
#include "core/log.h"
#include "core/read_checks.h"
#include "core/thread_pool.h"
#include "dataflux/crc32c.h"

namespace dataflux::internal {
namespace {

std::string authorization_of(const HttpRequest& request) {
  for (const auto& [name, value] : request.headers) {
    if (absl::EqualsIgnoreCase(name, "authorization")) return value;
  }
  return "";
}

// How a response shows in a rejection message: its status and the headers that place it.
std::string describe(const HttpResponse& head) {
  std::string out = absl::StrCat("HTTP ", head.http_status);
  if (auto range = head.header("content-range")) absl::StrAppend(&out, ", Content-Range: ", *range);
  if (auto length = head.header("content-length")) {
    absl::StrAppend(&out, ", Content-Length: ", *length);
  }
  return out;
}

}  // namespace

void ObjectRead::start(std::shared_ptr<ReadProtocol> protocol, const ReadObjectRequest& request,
                       ReadTarget target, AsyncCallback<ReadObjectResult> done) {
  std::string context = absl::StrCat("GET ", protocol->url(request));
  absl::Status invalid = protocol->validate(request);
  if (!invalid.ok()) {
    // the backend's refusal already names the operation
  } else if (target.buffer == nullptr && !target.sink && target.capacity > 0) {
    invalid = absl::InvalidArgumentError(absl::StrCat(context, ": null buffer"));
  } else if (request.length && !target.sink && *request.length > target.capacity) {
    invalid = absl::InvalidArgumentError(absl::StrCat(context, ": ", *request.length,
                                                      " bytes requested but the buffer holds only ",
                                                      target.capacity));
  } else if (request.length && *request.length > UINT64_MAX - request.offset) {
    invalid = absl::InvalidArgumentError(absl::StrCat(context, ": offset + length overflows"));
  }
  if (!invalid.ok()) {
    // Even errors found up front are reported on a transport thread, as for any other outcome.
    protocol->transport().run_after(absl::ZeroDuration(),
                                    [done = std::move(done), invalid] { done(invalid); });
    return;
  }
  auto op = std::make_shared<ObjectRead>(std::move(protocol), request, std::move(target),
                                         std::move(done));
  if (request.length && *request.length == 0) {
    op->probe_size();  // nothing to transfer, but the offset must still be within the object
  } else {
    op->attempt();
  }
}

absl::StatusOr<ReadObjectResult> ObjectRead::run(std::shared_ptr<ReadProtocol> protocol,
                                                 const ReadObjectRequest& request,
                                                 ReadTarget target) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<ReadObjectResult>>>();
  auto future = promise->get_future();
  start(std::move(protocol), request, std::move(target),
        [promise](absl::StatusOr<ReadObjectResult> result) {
          promise->set_value(std::move(result));
        });
  return future.get();
}

ObjectRead::ObjectRead(std::shared_ptr<ReadProtocol> protocol, const ReadObjectRequest& request,
                       ReadTarget target, AsyncCallback<ReadObjectResult> done)
    : protocol_(std::move(protocol)),
      request_(request),
      target_(std::move(target)),
      done_(std::move(done)),
      retry_(protocol_->retry_options(), Idempotency::kIdempotent) {
  pin_.generation = request.generation;
  pin_.etag = request.etag;
}

std::string ObjectRead::context() const { return absl::StrCat("GET ", protocol_->url(request_)); }

std::optional<std::uint64_t> ObjectRead::end() const {
  if (request_.length) return request_.offset + *request_.length;
  return object_size_;
}

bool ObjectRead::moved_off_loop(Step step) {
  // Authorizing may fetch a token through the transport, which a loop thread cannot wait for
  // (retries and 401 refreshes run there), so such steps continue on the blocking pool.
  if (!protocol_->may_block() || !protocol_->transport().on_loop_thread()) return false;
  auto self = shared_from_this();
  ThreadPool::blocking().run([self, step] { ((*self).*step)(); });
  return true;
}

void ObjectRead::attempt() {
  if (moved_off_loop(&ObjectRead::attempt)) return;
  ++attempts_;
  attempt_start_ = delivered_;
  skip_ = 0;
  have_all_ = false;
  overflow_ = false;
  rejected_ = absl::OkStatus();
  auto range = read_range_header(request_.offset, request_.length, delivered_);
  auto request =
      protocol_->media_request(request_, pin_, range, whole_object() && request_.verify_crc32c);
  if (!request.ok()) return retry_or_fail(request.status());
  sent_authorization_ = authorization_of(*request);
  auto self = shared_from_this();
  request->on_headers = [self](const HttpResponse& head) { return self->on_headers(head); };
  request->body_sink = [self](const char* data, std::size_t size) {
    return self->on_bytes(data, size);
  };
  request->connect_timeout = retry_.remaining();
  protocol_->transport().submit(*std::move(request), [self](HttpResponse response) {
    self->on_response(std::move(response));
  });
}

bool ObjectRead::reject(absl::Status status) {
  rejected_ = std::move(status);
  return false;
}

// Runs before any byte of a 2xx response is accepted: is this the range and version asked for?
absl::Status ObjectRead::version_changed(const std::string& now) const {
  const std::string pinned = pin_.etag.empty()
                                 ? absl::StrCat("generation ", pin_.generation.value_or(0))
                                 : absl::StrCat("ETag ", pin_.etag);
  const std::string live = now.empty() ? "" : absl::StrCat("; the live one is ", now);
  if (delivered_ == 0 && (!request_.etag.empty() || request_.generation)) {
    return absl::FailedPreconditionError(absl::StrCat(context(), ": the version asked for (",
                                                      pinned, ") is no longer the live one", live,
                                                      ": the object was overwritten"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      context(), ": the object changed while it was being read (the version first read, ", pinned,
      ", is gone after ", delivered_, " bytes", live, ")"));
}

bool ObjectRead::on_headers(const HttpResponse& head) {
  MediaHeaders facts = protocol_->parse_media_headers(head, whole_object());
  if (!facts.not_as_stored.empty()) {
    return reject(
        absl::FailedPreconditionError(absl::StrCat(context(), ": ", facts.not_as_stored)));
  }
  const auto& seen = facts.version;
  if ((pin_.generation && seen.generation && *pin_.generation != *seen.generation) ||
      (!pin_.etag.empty() && !seen.etag.empty() && pin_.etag != seen.etag)) {
    return reject(version_changed(pin_.generation
                                      ? absl::StrCat("generation ", seen.generation.value_or(0))
                                      : absl::StrCat("ETag ", seen.etag)));
  }
  if (!pin_.generation) pin_.generation = seen.generation;
  if (pin_.etag.empty()) pin_.etag = seen.etag;
  if (facts.crc32c && whole_object()) server_crc32c_ = facts.crc32c;
  if (facts.stored_size) object_size_ = facts.stored_size;

  const std::uint64_t start = position();
  auto length = head.header("content-length");
  std::optional<std::uint64_t> content_length;
  if (length) {
    content_length = parse_decimal_u64(*length);
    if (!content_length) {
      return reject(absl::UnavailableError(
          absl::StrCat(context(), ": malformed response (", describe(head), ")")));
    }
  }
  if (head.http_status == 206) {
    auto range = parse_content_range(head.header("content-range").value_or(""));
    if (!range || !range->first) {
      return reject(absl::UnavailableError(absl::StrCat(
          context(), ": a 206 response without a valid Content-Range (", describe(head), ")")));
    }
    if (*range->first != start) {
      return reject(absl::UnavailableError(
          absl::StrCat(context(), ": asked for bytes from ", start, " but the response starts at ",
                       *range->first, " (", describe(head), "); its bytes were not used")));
    }
    if (content_length && *content_length != *range->last - *range->first + 1) {
      return reject(absl::UnavailableError(absl::StrCat(
          context(), ": Content-Length disagrees with Content-Range (", describe(head), ")")));
    }
    if (range->total) {
      if (object_size_ && *object_size_ != *range->total) {
        return reject(absl::UnavailableError(
            absl::StrCat(context(), ": the object's size is ", *object_size_,
                         " but the response says ", *range->total, " (", describe(head), ")")));
      }
      object_size_ = range->total;
    }
  } else if (head.http_status == 200) {
    // The whole object from byte 0: asked for (no Range sent), or a server that ignored the
    // Range of a ranged or resumed read. Either way the bytes before `start` are not wanted.
    skip_ = start;
    if (content_length && !object_size_) object_size_ = content_length;
  } else {
    return reject(absl::UnavailableError(
        absl::StrCat(context(), ": unexpected response to a media read (", describe(head), ")")));
  }
  return true;
}

bool ObjectRead::on_bytes(const char* data, std::size_t size) {
  if (skip_ > 0) {
    const std::size_t skipped = static_cast<std::size_t>(std::min<std::uint64_t>(skip_, size));
    skip_ -= skipped;
    data += skipped;
    size -= skipped;
    if (size == 0) return true;
  }
  std::size_t take = size;
  if (auto last = end()) {
    take = static_cast<std::size_t>(std::min<std::uint64_t>(size, *last - position()));
  }
  if (take > 0 && !deliver(data, take)) return false;
  if (take < size) {
    // A body longer than asked (or than the object): what was asked for is all here.
    have_all_ = true;
    return false;
  }
  return true;
}

bool ObjectRead::deliver(const char* data, std::size_t size) {
  if (target_.sink) {
    absl::Status s = target_.sink(data, size);
    if (!s.ok()) {
      sink_error_ = std::move(s);
      return false;
    }
  } else {
    if (delivered_ + size > target_.capacity) {
      overflow_ = true;
      return false;
    }
    std::memcpy(target_.buffer + delivered_, data, size);
  }
  if (whole_object() && request_.verify_crc32c) crc_ = crc32c_extend(crc_, data, size);
  delivered_ += size;
  return true;
}

void ObjectRead::on_response(HttpResponse response) {
  if (overflow_) {
    std::string size_note =
        object_size_ ? absl::StrCat(" (the object has ", *object_size_, " bytes)") : "";
    return complete(absl::InvalidArgumentError(
        absl::StrCat(context(), ": reading from offset ", request_.offset,
                     " needs more than the buffer's ", target_.capacity, " bytes", size_note)));
  }
  if (!sink_error_.ok()) return complete(sink_error_);
  if (have_all_) return complete(finish_success());
  // Bytes delivered mean this attempt moved the read forward: it did not fail.
  if (delivered_ > attempt_start_) retry_.on_progress();
  if (!rejected_.ok()) return retry_or_fail(rejected_);
  if (protocol_->refresh_after_unauthorized(response, sent_authorization_, &refreshed_)) {
    return attempt();
  }
  if (response.status.ok() && response.http_status == 416 && delivered_ == 0) {
    return probe_size();
  }
  if (response.status.ok() && protocol_->version_gone(response, pin_)) {
    return complete(version_changed(""));
  }
  if (auto s = protocol_->check(response, context()); !s.ok()) return retry_or_fail(s);
  if (skip_ > 0) {
    // A 200 shorter than the offset asked for: the object ends before it.
    return complete(absl::OutOfRangeError(absl::StrCat(context(), ": offset ", request_.offset,
                                                       " is past the end of the object (",
                                                       object_size_.value_or(0), " bytes)")));
  }

  // A complete response: make sure it covered the whole range before declaring success.
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

absl::StatusOr<ReadObjectResult> ObjectRead::finish_success() {
  ReadObjectResult result;
  result.bytes = delivered_;
  result.object_size = object_size_.value_or(request_.offset + delivered_);
  result.generation = pin_.generation.value_or(0);
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

void ObjectRead::probe_size() {
  if (moved_off_loop(&ObjectRead::probe_size)) return;
  ++attempts_;
  auto request = protocol_->size_request(request_, pin_);
  if (!request.ok()) return retry_or_fail(request.status(), &ObjectRead::probe_size);
  sent_authorization_ = authorization_of(*request);
  auto self = shared_from_this();
  request->connect_timeout = retry_.remaining();
  protocol_->transport().submit(*std::move(request), [self](HttpResponse response) {
    self->on_probe_response(std::move(response));
  });
}

void ObjectRead::on_probe_response(HttpResponse response) {
  if (protocol_->refresh_after_unauthorized(response, sent_authorization_, &refreshed_)) {
    return probe_size();
  }
  if (auto s = protocol_->check(response, context()); !s.ok()) {
    return retry_or_fail(s, &ObjectRead::probe_size);
  }
  auto size = protocol_->parse_size(response, request_, context());
  if (!size.ok()) return complete(size.status());
  if (request_.offset > size->size) {
    return complete(absl::OutOfRangeError(absl::StrCat(context(), ": offset ", request_.offset,
                                                       " is past the end of the object (",
                                                       size->size, " bytes)")));
  }
  if (request_.offset < size->size && !(request_.length && *request_.length == 0)) {
    // A 416 for a range that exists: the object changed in between; try again.
    return retry_or_fail(absl::UnavailableError(
        absl::StrCat(context(), ": range not satisfiable for a ", size->size, "-byte object")));
  }
  ReadObjectResult result;
  result.object_size = size->size;
  result.generation = size->version.generation.value_or(0);
  result.crc32c = size->crc32c;
  result.attempts = attempts_;
  complete(result);
}

void ObjectRead::retry_or_fail(const absl::Status& error, Step next) {
  auto delay = retry_.on_failure(error);
  if (!delay) return complete(retry_.final_error(error));
  if (delivered_ > 0 && log_enabled(LogLevel::kInfo)) {
    log(LogLevel::kInfo, absl::StrCat(context(), ": resuming at byte ", position(), " with ",
                                      delivered_, " bytes delivered"));
  }
  auto self = shared_from_this();
  protocol_->transport().run_after(*delay, [self, next] { ((*self).*next)(); });
}

void ObjectRead::complete(absl::StatusOr<ReadObjectResult> result) {
  auto done = std::move(done_);
  done_ = nullptr;
  if (done) done(std::move(result));
}

}  // namespace dataflux::internal
