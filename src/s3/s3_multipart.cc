#include "s3/s3_multipart.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/http_status.h"
#include "core/retry_policy.h"
#include "core/sigv4.h"
#include "dataflux/crc32c.h"
#include "s3/s3_read.h"
#include "s3/s3_xml.h"

namespace dataflux::internal {

std::string complete_multipart_body(const std::vector<CompletedPart>& parts) {
  std::string body = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
  for (const auto& p : parts) {
    absl::StrAppend(&body, "<Part><PartNumber>", p.number, "</PartNumber><ETag>",
                    xml_escape(p.etag), "</ETag>");
    if (!p.crc32c_base64.empty()) {
      absl::StrAppend(&body, "<ChecksumCRC32C>", p.crc32c_base64, "</ChecksumCRC32C>");
    }
    absl::StrAppend(&body, "</Part>");
  }
  absl::StrAppend(&body, "</CompleteMultipartUpload>");
  return body;
}

absl::StatusOr<std::unique_ptr<MultipartUpload>> S3MultipartUpload::create(
    std::shared_ptr<S3Client> client, const WriteObjectRequest& request) {
  const std::string context =
      absl::StrCat("CreateMultipartUpload ", s3_url(request.bucket, request.object));
  if (request.if_generation_match && *request.if_generation_match != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        context, ": S3 has no generations; only if_generation_match = 0 (must not exist)"));
  }
  S3Call call;
  call.method = "POST";
  call.bucket = request.bucket;
  call.key = request.object;
  call.query = {{"uploads", ""}};
  // FULL_OBJECT: S3 keeps (and HEAD reports) the CRC32C of the whole object, which loads can
  // check; the default for CRC32C is a checksum of the parts' checksums, which they cannot.
  call.headers = {{"Content-Type", request.content_type},
                  {"x-amz-checksum-algorithm", "CRC32C"},
                  {"x-amz-checksum-type", "FULL_OBJECT"}};
  auto response = client->execute(call, Idempotency::kIdempotent, context);
  if (!response.ok()) return response.status();
  auto doc = parse_xml(response->body);
  if (!doc.ok()) return annotate(doc.status(), context);
  std::string upload_id = doc->child_text("UploadId");
  if (upload_id.empty()) {
    return absl::InternalError(absl::StrCat(context, ": the response has no UploadId"));
  }
  return std::unique_ptr<MultipartUpload>(
      new S3MultipartUpload(std::move(client), request, std::move(upload_id)));
}

S3MultipartUpload::S3MultipartUpload(std::shared_ptr<S3Client> client, WriteObjectRequest request,
                                     std::string upload_id)
    : client_(std::move(client)), request_(std::move(request)), upload_id_(std::move(upload_id)) {}

S3MultipartUpload::~S3MultipartUpload() {
  bool finished = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished = finished_;
  }
  if (!finished) {
    RetryBudgetScope budget(destructor_budget());  // what is left is cleanup's
    (void)abort();
  }
}

std::string S3MultipartUpload::context() const {
  // Upload ids, like resumable session URLs, stay out of messages and logs.
  return absl::StrCat(s3_url(request_.bucket, request_.object), " (multipart upload)");
}

absl::Status S3MultipartUpload::upload_part(int number, std::string_view data) {
  const std::string context = absl::StrCat("UploadPart ", number, " of ", this->context());
  if (number < 1 || number > kS3MaxParts) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": part numbers are 1..", kS3MaxParts));
  }
  if (data.size() > kS3MaxPartSize) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ": ", data.size(), " bytes is over S3's 5 GiB part limit"));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) {
      return absl::FailedPreconditionError(
          absl::StrCat(context, ": the upload was already completed or aborted"));
    }
  }
  const std::uint32_t crc = crc32c(data);
  const std::string crc_b64 = crc32c_to_base64(crc);
  S3Call call;
  call.method = "PUT";
  call.bucket = request_.bucket;
  call.key = request_.object;
  call.query = {{"partNumber", absl::StrCat(number)}, {"uploadId", upload_id_}};
  call.headers = {{"x-amz-checksum-crc32c", crc_b64}};
  call.body_view = data;
  call.sign_payload = false;  // the CRC32C protects the bytes; hashing them twice costs CPU
  auto response = client_->execute(call, Idempotency::kIdempotent, context);
  if (!response.ok()) return response.status();
  std::string etag = response->header("etag").value_or("");
  if (etag.empty()) {
    return absl::InternalError(absl::StrCat(context, ": the response has no ETag"));
  }
  if (auto echoed = response->header("x-amz-checksum-crc32c"); echoed && *echoed != crc_b64) {
    return absl::DataLossError(absl::StrCat(context, ": the server stored CRC32C ", *echoed,
                                            " but the part has ", crc_b64));
  }
  std::lock_guard<std::mutex> lock(mu_);
  parts_[number] = Part{std::move(etag), data.size(), crc};
  return absl::OkStatus();
}

absl::StatusOr<ObjectMetadata> S3MultipartUpload::complete() {
  const std::string context = absl::StrCat("CompleteMultipartUpload ", this->context());
  std::vector<CompletedPart> parts;
  ObjectMetadata meta;
  meta.bucket = request_.bucket;
  meta.name = request_.object;
  meta.content_type = request_.content_type;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) {
      return absl::FailedPreconditionError(
          absl::StrCat(context, ": the upload was already completed or aborted"));
    }
    if (parts_.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(context, ": no parts were uploaded"));
    }
    const int last = parts_.rbegin()->first;
    for (int n = 1; n <= last; ++n) {
      if (parts_.count(n) == 0) {
        return absl::FailedPreconditionError(
            absl::StrCat(context, ": part ", n, " of 1..", last, " was never uploaded"));
      }
    }
    std::uint32_t crc = 0;
    for (int n = 1; n <= last; ++n) {
      auto it = parts_.find(n);
      if (n < last && it->second.size < kS3MinPartSize) {
        return absl::InvalidArgumentError(absl::StrCat(context, ": part ", n, " has ",
                                                       it->second.size,
                                                       " bytes; every part but the last needs "
                                                       "at least 5 MiB"));
      }
      parts.push_back({n, it->second.etag, crc32c_to_base64(it->second.crc32c)});
      crc = n == 1 ? it->second.crc32c : crc32c_combine(crc, it->second.crc32c, it->second.size);
      meta.size += it->second.size;
    }
    meta.crc32c = crc;
  }
  S3Call call;
  call.method = "POST";
  call.bucket = request_.bucket;
  call.key = request_.object;
  call.query = {{"uploadId", upload_id_}};
  // The whole object's CRC32C, which S3 checks against what it assembled before the object
  // exists (BadDigest otherwise).
  const std::string ours = crc32c_to_base64(*meta.crc32c);
  call.headers = {{"Content-Type", "application/xml"},
                  {"x-amz-checksum-crc32c", ours},
                  {"x-amz-checksum-type", "FULL_OBJECT"}};
  if (request_.if_generation_match) call.headers.emplace_back("If-None-Match", "*");
  call.body = complete_multipart_body(parts);
  // A 200 can still carry an <Error> (S3 answers before it has finished); that is retried
  // like a 5xx. Completing the same parts again is harmless.
  auto response = send_with_retry(
      client_->transport(), client_->options().retry, Idempotency::kIdempotent,
      [&] { return client_->new_request(call); },
      [&](const HttpResponse& r) {
        absl::Status s = client_->check(r, context);
        return s.ok() ? embedded_error(r.body, context) : s;
      });
  if (!response.ok() && response.status().code() == absl::StatusCode::kNotFound) {
    // NoSuchUpload: a re-send (ours or libcurl's) whose first copy completed the upload and
    // lost its reply. The object is ours when the server holds exactly our size and CRC32C.
    if (applied_before(meta.size, ours)) {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
      meta.updated = std::chrono::system_clock::now();
      return meta;
    }
  }
  if (!response.ok()) return response.status();
  auto doc = parse_xml(response->body);
  if (!doc.ok()) return annotate(doc.status(), context);
  // The object's CRC32C is what the server says it stored, never our own arithmetic: absent
  // (a store without FULL_OBJECT checksums) it stays unknown.
  const std::string stored = doc->child_text("ChecksumCRC32C");
  const std::string type = doc->child_text("ChecksumType");
  meta.crc32c.reset();
  if (!stored.empty() && type != "COMPOSITE" && stored.find('-') == std::string::npos) {
    if (stored != ours) {
      return absl::DataLossError(absl::StrCat(context, ": the server stored CRC32C ", stored,
                                              " but the parts sent have ", ours));
    }
    meta.crc32c = *crc32c_from_base64(stored);
  }
  meta.etag = doc->child_text("ETag");  // quoted, as the ETag header carries it
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
  }
  meta.updated = std::chrono::system_clock::now();
  return meta;
}

bool S3MultipartUpload::applied_before(std::uint64_t size, const std::string& crc_base64) {
  S3Call head;
  head.method = "HEAD";
  head.bucket = request_.bucket;
  head.key = request_.object;
  head.headers = {{"x-amz-checksum-mode", "ENABLED"}};
  auto live = client_->execute(head, Idempotency::kIdempotent,
                               absl::StrCat("HEAD ", s3_url(request_.bucket, request_.object)));
  if (!live.ok()) return false;
  auto crc = full_object_crc32c(*live);
  return crc && crc32c_to_base64(*crc) == crc_base64 &&
         live->header("content-length").value_or("") == absl::StrCat(size);
}

absl::Status S3MultipartUpload::abort() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return absl::OkStatus();
    finished_ = true;
  }
  S3Call call;
  call.method = "DELETE";
  call.bucket = request_.bucket;
  call.key = request_.object;
  call.query = {{"uploadId", upload_id_}};
  auto response = client_->execute(call, Idempotency::kIdempotent,
                                   absl::StrCat("AbortMultipartUpload ", context()));
  if (!response.ok() && response.status().code() != absl::StatusCode::kNotFound) {
    return response.status();
  }
  return absl::OkStatus();
}

}  // namespace dataflux::internal
