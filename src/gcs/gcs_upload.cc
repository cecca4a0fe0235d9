#include "gcs/gcs_upload.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/absl_view.h"
#include "core/http_status.h"
#include "core/read_checks.h"
#include "core/retry_policy.h"
#include "dataflux/crc32c.h"
#include "gcs/gcs_json.h"
#include "gcs/gcs_paths.h"

namespace dataflux::internal {
std::string multipart_body(std::string_view boundary, std::string_view metadata_json,
                           std::string_view content_type, std::string_view data) {
  std::string body;
  body.reserve(data.size() + metadata_json.size() + 3 * boundary.size() + 200);
  absl::StrAppend(&body, "--", av(boundary),
                  "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n", av(metadata_json),
                  "\r\n--", av(boundary), "\r\nContent-Type: ", av(content_type), "\r\n\r\n");
  body.append(data.data(), data.size());
  absl::StrAppend(&body, "\r\n--", av(boundary), "--\r\n");
  return body;
}

std::string pick_multipart_boundary(std::string_view data) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  for (;;) {
    std::string boundary = absl::StrFormat("dataflux_%016x%016x", rng(), rng());
    if (data.find(boundary) == std::string_view::npos) return boundary;
  }
}

std::optional<std::uint64_t> persisted_from_range_header(const std::optional<std::string>& value) {
  if (!value) return 0;
  absl::string_view v = *value;
  if (!absl::ConsumePrefix(&v, "bytes=")) return std::nullopt;
  auto dash = v.find('-');
  if (dash == absl::string_view::npos) return std::nullopt;
  std::uint64_t first = 0, last = 0;
  if (!absl::SimpleAtoi(v.substr(0, dash), &first) || first != 0 ||
      !absl::SimpleAtoi(v.substr(dash + 1), &last)) {
    return std::nullopt;
  }
  return last + 1;
}

absl::StatusOr<std::unique_ptr<WriteSession>> GcsWriteSession::start(
    std::shared_ptr<GcsClient> client, const WriteObjectRequest& request) {
  QueryString query;
  query.add("uploadType", "resumable");
  query.add("name", request.object);
  if (request.if_generation_match) query.add("ifGenerationMatch", *request.if_generation_match);
  std::string path =
      absl::StrCat("/upload/storage/v1/b/", percent_encode(request.bucket), "/o", query.str());
  std::string metadata = upload_metadata_json(request.object, request.content_type, std::nullopt);
  std::string context =
      absl::StrCat("POST ", gs_url(request.bucket, request.object), " (start resumable upload)");
  // Starting a session creates nothing, so retrying the start is safe.
  auto response = client->execute(
      [&] {
        HttpRequest r = client->new_request("POST", path);
        r.headers.emplace_back("Content-Type", "application/json; charset=UTF-8");
        r.headers.emplace_back("X-Upload-Content-Type", request.content_type);
        r.body_view = metadata;
        return r;
      },
      Idempotency::kIdempotent, context);
  if (!response.ok()) return response.status();
  auto location = response->header("location");
  if (!location || location->empty()) {
    return absl::InternalError(absl::StrCat(context, ": the server returned no session URL"));
  }
  return std::unique_ptr<WriteSession>(
      new GcsWriteSession(std::move(client), request, *std::move(location)));
}

absl::StatusOr<std::unique_ptr<WriteSession>> GcsWriteSession::resume(
    std::shared_ptr<GcsClient> client, const WriteObjectRequest& request,
    const std::string& session_id) {
  // The session URL gets our Authorization header: never send it to another host.
  if (!absl::StartsWith(session_id, client->endpoint() + "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat("resume upload of ", gs_url(request.bucket, request.object),
                     ": the session id is not a session URL on ", client->endpoint()));
  }
  std::unique_ptr<GcsWriteSession> session(
      new GcsWriteSession(std::move(client), request, session_id));
  session->crc_known_ = false;
  RetryState retry(session->client_->options().retry, Idempotency::kIdempotent);
  for (;;) {
    auto status = session->query_status();
    absl::Status s = status.status();
    if (s.ok()) s = session->apply_progress(*status, &session->finished_);
    if (s.ok()) break;
    auto delay = retry.on_failure(s);
    if (!delay) {
      session->state_ = State::kDetached;  // the caller may still want to resume it later
      return retry.final_error(s);
    }
    retry.clock().sleep_for(*delay);
  }
  return std::unique_ptr<WriteSession>(std::move(session));
}

GcsWriteSession::GcsWriteSession(std::shared_ptr<GcsClient> client,
                                 const WriteObjectRequest& request, std::string session_url)
    : client_(std::move(client)),
      request_(request),
      session_url_(std::move(session_url)),
      context_(absl::StrCat("PUT ", gs_url(request.bucket, request.object), " (resumable upload)")),
      chunk_size_(client_->options().resumable_chunk_size) {}

GcsWriteSession::~GcsWriteSession() {
  RetryBudgetScope budget(destructor_budget());  // never long on the network
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == State::kOpen || state_ == State::kFailed) cancel_locked().IgnoreError();
}

std::uint64_t GcsWriteSession::persisted_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return persisted_;
}

absl::Status GcsWriteSession::write(std::string_view data) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != State::kOpen || finished_) {
    return absl::FailedPreconditionError(
        absl::StrCat(context_, ": write() on a session that is finished, cancelled or failed"));
  }
  if (crc_known_) crc_ = crc32c_extend(crc_, data);
  for (;;) {
    if (buffer_.empty() && data.size() >= chunk_size_) {
      // A whole chunk straight from the caller's bytes: no copy.
      std::uint64_t before = persisted_;
      if (auto s = send(data.substr(0, chunk_size_), false, nullptr); !s.ok()) {
        state_ = State::kFailed;
        return s;
      }
      data.remove_prefix(persisted_ - before);
      continue;
    }
    std::size_t take = std::min<std::size_t>(chunk_size_ - buffer_.size(), data.size());
    buffer_.append(data.data(), take);
    data.remove_prefix(take);
    if (buffer_.size() < chunk_size_) return absl::OkStatus();
    std::uint64_t before = persisted_;
    if (auto s = send(buffer_, false, nullptr); !s.ok()) {
      state_ = State::kFailed;
      return s;
    }
    buffer_.erase(0, persisted_ - before);
  }
}

absl::StatusOr<ObjectMetadata> GcsWriteSession::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_ && state_ == State::kOpen) {  // resumed a session that had already completed
    state_ = State::kFinished;
    return verify_finished(*finished_);
  }
  if (state_ != State::kOpen) {
    return absl::FailedPreconditionError(
        absl::StrCat(context_, ": finish() on a session that is finished, cancelled or failed"));
  }
  std::optional<ObjectMetadata> done;
  if (auto s = send(buffer_, true, &done); !s.ok()) {
    state_ = State::kFailed;
    return s;
  }
  state_ = State::kFinished;
  buffer_.clear();
  buffer_.shrink_to_fit();
  return verify_finished(*done);
}

absl::StatusOr<ObjectMetadata> GcsWriteSession::verify_finished(ObjectMetadata metadata) const {
  std::optional<std::uint32_t> expected = request_.crc32c;
  if (!expected && crc_known_) expected = crc_;
  if (expected && metadata.crc32c && *metadata.crc32c != *expected) {
    return discard_stored(
        *client_, metadata,
        absl::DataLossError(absl::StrCat(context_, ": the stored object's CRC32C is ",
                                         crc32c_text(*metadata.crc32c), " but ",
                                         crc32c_text(*expected), " was uploaded")));
  }
  return metadata;
}

absl::Status GcsWriteSession::cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == State::kFinished) {
    return absl::FailedPreconditionError(absl::StrCat(context_, ": cancel() after finish()"));
  }
  return cancel_locked();
}

absl::Status GcsWriteSession::cancel_locked() {
  if (state_ == State::kCancelled) return absl::OkStatus();
  RetryState retry(client_->options().retry, Idempotency::kIdempotent);
  std::string context = absl::StrCat("DELETE ", gs_url(request_.bucket, request_.object),
                                     " (cancel resumable upload)");
  for (;;) {
    HttpRequest r = client_->new_request_to_url("DELETE", session_url_);
    absl::Status s = client_->authorize(r);
    if (s.ok()) {
      r.connect_timeout = retry.remaining();
      if (retry.bounded()) r.timeout = retry.remaining();  // under a destructor's budget
      HttpResponse response = client_->transport().send(std::move(r));
      // GCS answers a cancelled session with 499; a session already gone is just as good.
      bool gone =
          response.status.ok() && (response.http_status == 499 || response.http_status == 404 ||
                                   response.http_status == 410);
      s = gone ? absl::OkStatus() : client_->check(response, context);
    }
    if (s.ok()) {
      state_ = State::kCancelled;
      buffer_.clear();
      return s;
    }
    auto delay = retry.on_failure(s);
    if (!delay) return retry.final_error(s);
    retry.clock().sleep_for(*delay);
  }
}

absl::StatusOr<HttpResponse> GcsWriteSession::query_status() {
  bool refreshed = false;  // one forced token refresh per query, then a 401 is an error
  for (;;) {
    HttpRequest r = client_->new_request_to_url("PUT", session_url_);
    r.headers.emplace_back("Content-Range", "bytes */*");
    if (auto s = client_->authorize(r); !s.ok()) return s;
    std::string sent_authorization = GcsClient::authorization_of(r);
    HttpResponse response = client_->transport().send(std::move(r));
    if (client_->refresh_after_unauthorized(response, sent_authorization, &refreshed)) continue;
    if (auto s = client_->check(response, context_); !s.ok()) return s;
    return response;
  }
}

absl::Status GcsWriteSession::apply_progress(const HttpResponse& response,
                                             std::optional<ObjectMetadata>* finished) {
  if (response.http_status == 308) {
    auto persisted = persisted_from_range_header(response.header("range"));
    if (!persisted) {
      return absl::InternalError(absl::StrCat(context_, ": malformed Range header in 308 reply: \"",
                                              response.header("range").value_or(""), "\""));
    }
    if (*persisted < persisted_) {
      return absl::DataLossError(absl::StrCat(context_, ": the server reports ", *persisted,
                                              " bytes persisted after acknowledging ", persisted_));
    }
    persisted_ = *persisted;
    return absl::OkStatus();
  }
  if (response.http_status == 200 || response.http_status == 201) {
    if (finished == nullptr) {
      return absl::InternalError(
          absl::StrCat(context_, ": the server completed the upload before the last chunk"));
    }
    auto metadata = parse_object_resource(response.body, request_.bucket, context_);
    if (!metadata.ok()) return metadata.status();
    persisted_ = metadata->size;
    *finished = *std::move(metadata);
    return absl::OkStatus();
  }
  return absl::InternalError(
      absl::StrCat(context_, ": unexpected HTTP ", response.http_status, " from the upload"));
}

absl::Status GcsWriteSession::send(std::string_view data, bool final,
                                   std::optional<ObjectMetadata>* finished) {
  const std::uint64_t start = persisted_;  // data[0] is byte `start` of the object
  const std::uint64_t total = start + data.size();
  std::optional<std::uint32_t> whole_crc = request_.crc32c;
  if (!whole_crc && crc_known_) whole_crc = crc_;
  RetryState retry(client_->options().retry, Idempotency::kIdempotent);
  bool refreshed = false;
  for (;;) {
    if (persisted_ > total) {
      return absl::DataLossError(absl::StrCat(context_, ": the server reports ", persisted_,
                                              " bytes persisted but only ", total, " were sent"));
    }
    std::string_view rest = data.substr(persisted_ - start);
    HttpRequest r = client_->new_request_to_url("PUT", session_url_);
    if (final) {
      r.headers.emplace_back("Content-Range", rest.empty() ? absl::StrCat("bytes */", total)
                                                           : absl::StrCat("bytes ", persisted_, "-",
                                                                          total - 1, "/", total));
      if (whole_crc) {
        r.headers.emplace_back("x-goog-hash",
                               absl::StrCat("crc32c=", crc32c_to_base64(*whole_crc)));
      }
    } else {
      r.headers.emplace_back("Content-Range",
                             absl::StrCat("bytes ", persisted_, "-", total - 1, "/*"));
    }
    r.body_view = rest;
    absl::Status s = client_->authorize(r);
    if (s.ok()) {
      std::string sent_authorization = GcsClient::authorization_of(r);
      r.connect_timeout = retry.remaining();
      if (retry.bounded()) r.timeout = retry.remaining();  // under a destructor's budget
      HttpResponse response = client_->transport().send(std::move(r));
      if (client_->refresh_after_unauthorized(response, sent_authorization, &refreshed)) continue;
      s = client_->check(response, context_);
      if (s.ok()) {
        const std::uint64_t before = persisted_;
        if (auto p = apply_progress(response, finished); !p.ok()) return p;
        if (final && finished->has_value()) return absl::OkStatus();
        if (!final && persisted_ > before) return absl::OkStatus();
        s = absl::UnavailableError(absl::StrCat(context_, ": the server acknowledged ", persisted_,
                                                " of ", total, " bytes"));
      }
    }
    // Back off, then ask the server what it kept so only the rest is sent again.
    for (;;) {
      auto delay = retry.on_failure(s);
      if (!delay) return retry.final_error(s);
      retry.clock().sleep_for(*delay);
      auto status = query_status();
      s = status.status();
      if (s.ok()) {
        const std::uint64_t before = persisted_;
        if (auto p = apply_progress(*status, finished); !p.ok()) return p;
        if (final && finished->has_value()) return absl::OkStatus();
        if (!final && persisted_ > before && persisted_ >= total) return absl::OkStatus();
        break;
      }
    }
  }
}

absl::Status discard_stored(GcsClient& client, const ObjectMetadata& stored, absl::Status loss) {
  QueryString query;
  query.add("ifGenerationMatch", stored.generation);  // only what we wrote: idempotent
  const std::string path = object_path(stored.bucket, stored.name) + query.str();
  auto deleted =
      client.execute([&] { return client.new_request("DELETE", path); }, Idempotency::kIdempotent,
                     absl::StrCat("DELETE ", gs_url(stored.bucket, stored.name)));
  return absl::Status(
      loss.code(),
      absl::StrCat(loss.message(),
                   deleted.ok()
                       ? "; the object was deleted"
                       : absl::StrCat("; deleting it failed too (", deleted.status().message(),
                                      "): remove generation ", stored.generation, " by hand")));
}

}  // namespace dataflux::internal
