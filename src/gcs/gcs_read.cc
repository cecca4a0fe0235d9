#include "gcs/gcs_read.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/read_checks.h"
#include "core/thread_pool.h"
#include "dataflux/crc32c.h"
#include "gcs/gcs_json.h"
#include "gcs/gcs_paths.h"

namespace dataflux::internal {
namespace {

absl::string_view av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

std::optional<std::uint64_t> parse_u64(std::string_view text) {
  std::uint64_t v = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(av(text)), &v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::uint32_t> crc32c_from_hash_headers(const std::vector<std::string>& values) {
  for (const auto& value : values) {
    for (absl::string_view part : absl::StrSplit(value, ',')) {
      part = absl::StripAsciiWhitespace(part);
      if (absl::ConsumePrefix(&part, "crc32c=")) {
        return crc32c_from_base64(std::string_view(part.data(), part.size()));
      }
    }
  }
  return std::nullopt;
}

void ReadOperation::start(std::shared_ptr<GcsClient> client, const ReadObjectRequest& request,
                          ReadTarget target, AsyncCallback<ReadObjectResult> done) {
  std::string context = absl::StrCat("GET ", gs_url(request.bucket, request.object));
  absl::Status invalid;
  if (target.buffer == nullptr && !target.sink && target.capacity > 0) {
    invalid = absl::InvalidArgumentError(absl::StrCat(context, ": null buffer"));
  } else if (request.length && target.buffer != nullptr && *request.length > target.capacity) {
    invalid = absl::InvalidArgumentError(absl::StrCat(context, ": ", *request.length,
                                                      " bytes requested but the buffer holds only ",
                                                      target.capacity));
  } else if (request.length && *request.length > UINT64_MAX - request.offset) {
    invalid = absl::InvalidArgumentError(absl::StrCat(context, ": offset + length overflows"));
  }
  if (!invalid.ok()) {
    // Even errors found up front are reported on a transport thread, as for any other outcome.
    client->transport().run_after(absl::ZeroDuration(),
                                  [done = std::move(done), invalid] { done(invalid); });
    return;
  }
  auto op = std::make_shared<ReadOperation>(std::move(client), request, std::move(target),
                                            std::move(done));
  if (request.length && *request.length == 0) {
    op->probe_size();  // nothing to transfer, but the offset must still be within the object
  } else {
    op->attempt();
  }
}

ReadOperation::ReadOperation(std::shared_ptr<GcsClient> client, const ReadObjectRequest& request,
                             ReadTarget target, AsyncCallback<ReadObjectResult> done)
    : client_(std::move(client)),
      request_(request),
      target_(std::move(target)),
      done_(std::move(done)),
      retry_(client_->options().retry, Idempotency::kIdempotent),
      generation_(request.generation) {}

std::string ReadOperation::context() const {
  return absl::StrCat("GET ", gs_url(request_.bucket, request_.object));
}

bool ReadOperation::moved_off_loop(void (ReadOperation::*step)()) {
  // Authorizing may fetch a token through the transport, which a loop thread cannot wait for
  // (retries and 401 refreshes run there), so such steps continue on the shared pool.
  if (!client_->transport().on_loop_thread()) return false;
  auto self = shared_from_this();
  ThreadPool::shared().run([self, step] { ((*self).*step)(); });
  return true;
}

void ReadOperation::attempt() {
  if (moved_off_loop(&ReadOperation::attempt)) return;
  ++attempts_;
  overflow_ = false;
  too_many_bytes_ = false;
  QueryString query;
  query.add("alt", "media");
  if (generation_) query.add("generation", *generation_);
  HttpRequest request = client_->new_request(
      "GET", absl::StrCat("/download", object_path(request_.bucket, request_.object), query.str()));
  if (auto range = read_range_header(request_.offset, request_.length, delivered_)) {
    request.headers.emplace_back("Range", *std::move(range));
  }
  if (auto s = client_->authorize(request); !s.ok()) return retry_or_fail(s);
  sent_authorization_ = GcsClient::authorization_of(request);
  auto self = shared_from_this();
  request.body_sink = [self](const char* data, std::size_t size) {
    return self->on_bytes(data, size);
  };
  client_->transport().submit(std::move(request), [self](HttpResponse response) {
    self->on_response(std::move(response));
  });
}

// Only bodies of successful responses reach here (the transport keeps error documents in
// HttpResponse::body), so every byte is object data.
bool ReadOperation::on_bytes(const char* data, std::size_t size) { return deliver(data, size); }

bool ReadOperation::deliver(const char* data, std::size_t size) {
  if (request_.length && delivered_ + size > *request_.length) {
    too_many_bytes_ = true;
    return false;
  }
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

void ReadOperation::on_response(HttpResponse response) {
  const bool success = response.http_status >= 200 && response.http_status < 300;
  if (success) {
    if (!generation_) {
      if (auto g = response.header("x-goog-generation")) {
        std::int64_t v = 0;
        if (absl::SimpleAtoi(av(*g), &v)) generation_ = v;
      }
    }
    if (auto stored = response.header("x-goog-stored-content-length")) {
      object_size_ = parse_u64(*stored);
    } else if (auto range = response.header("content-range")) {
      object_size_ = total_from_content_range(*range);
    } else if (auto length = response.header("content-length");
               length && response.http_status == 200 && whole_object()) {
      object_size_ = parse_u64(*length);  // no Range was sent: the body is the whole object
    }
    if (auto crc = crc32c_from_hash_headers(response.header_values("x-goog-hash"))) {
      server_crc32c_ = crc;
    }
  }
  if (overflow_) {
    std::string size_note =
        object_size_ ? absl::StrCat(" (the object has ", *object_size_, " bytes)") : "";
    return complete(absl::InvalidArgumentError(
        absl::StrCat(context(), ": reading from offset ", request_.offset,
                     " needs more than the buffer's ", target_.capacity, " bytes", size_note)));
  }
  if (too_many_bytes_) {
    return complete(absl::InternalError(absl::StrCat(context(), ": the server sent more than the ",
                                                     *request_.length, " bytes requested")));
  }
  if (!sink_error_.ok()) return complete(sink_error_);
  if (client_->refresh_after_unauthorized(response, sent_authorization_, &refreshed_))
    return attempt();
  if (response.status.ok() && response.http_status == 416 && delivered_ == 0) {
    return probe_size();
  }
  if (auto s = client_->check(response, context()); !s.ok()) return retry_or_fail(s);

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

absl::StatusOr<ReadObjectResult> ReadOperation::finish_success() {
  ReadObjectResult result;
  result.bytes = delivered_;
  result.object_size = object_size_.value_or(request_.offset + delivered_);
  result.generation = generation_.value_or(0);
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

void ReadOperation::probe_size() {
  if (moved_off_loop(&ReadOperation::probe_size)) return;
  ++attempts_;
  QueryString query;
  query.add("fields", "name,size,generation");
  if (generation_) query.add("generation", *generation_);
  HttpRequest request = client_->new_request(
      "GET", absl::StrCat(object_path(request_.bucket, request_.object), query.str()));
  if (auto s = client_->authorize(request); !s.ok())
    return retry_or_fail(s, &ReadOperation::probe_size);
  sent_authorization_ = GcsClient::authorization_of(request);
  auto self = shared_from_this();
  client_->transport().submit(std::move(request), [self](HttpResponse response) {
    self->on_probe_response(std::move(response));
  });
}

void ReadOperation::on_probe_response(HttpResponse response) {
  if (client_->refresh_after_unauthorized(response, sent_authorization_, &refreshed_))
    return probe_size();
  if (auto s = client_->check(response, context()); !s.ok()) {
    return retry_or_fail(s, &ReadOperation::probe_size);
  }
  auto meta = parse_object_resource(response.body, request_.bucket, context());
  if (!meta.ok()) return complete(meta.status());
  if (request_.offset > meta->size) {
    return complete(absl::OutOfRangeError(absl::StrCat(context(), ": offset ", request_.offset,
                                                       " is past the end of the object (",
                                                       meta->size, " bytes)")));
  }
  ReadObjectResult result;
  result.object_size = meta->size;
  result.generation = meta->generation;
  result.crc32c = meta->crc32c;
  result.attempts = attempts_;
  complete(result);
}

void ReadOperation::retry_or_fail(const absl::Status& error, void (ReadOperation::*next)()) {
  auto delay = retry_.on_failure(error);
  if (!delay) return complete(retry_.final_error(error));
  auto self = shared_from_this();
  client_->transport().run_after(*delay, [self, next] { ((*self).*next)(); });
}

void ReadOperation::complete(absl::StatusOr<ReadObjectResult> result) {
  auto done = std::move(done_);
  done_ = nullptr;
  if (done) done(std::move(result));
}

}  // namespace dataflux::internal
