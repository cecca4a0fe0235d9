// The S3 ObjectStore: each operation as one S3 REST request through S3Client; reads through
// ObjectRead (with S3ReadProtocol), multipart uploads through S3MultipartUpload.
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/absl_view.h"
#include "core/byte_range.h"
#include "core/http_status.h"
#include "core/percent.h"
#include "core/read_checks.h"
#include "core/sigv4.h"
#include "dataflux/crc32c.h"
#include "dataflux/s3.h"
#include "s3/s3_client.h"
#include "s3/s3_list.h"
#include "s3/s3_multipart.h"
#include "s3/s3_read.h"
#include "s3/s3_xml.h"

namespace dataflux {
namespace {

using internal::Idempotency;
using internal::s3_url;
using internal::S3Call;

constexpr std::size_t kDeleteBatch = 1000;  // keys per DeleteObjects request (S3's limit)

absl::Status no_generations(std::string_view context, std::int64_t generation) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(context), ": S3 has no generations (", generation,
                   " was given); only if_generation_match = 0 (\"must not exist\") is supported"));
}

// The object's metadata from HEAD or PUT response headers.
ObjectMetadata metadata_from_headers(const internal::HttpResponse& response,
                                     const std::string& bucket, const std::string& object) {
  ObjectMetadata meta;
  meta.bucket = bucket;
  meta.name = object;
  meta.size =
      internal::parse_decimal_u64(response.header("content-length").value_or("")).value_or(0);
  meta.etag = response.header("etag").value_or("");
  meta.md5_hash = internal::md5_base64_from_etag(meta.etag);
  meta.crc32c = internal::full_object_crc32c(response);
  meta.content_type = response.header("content-type").value_or("");
  meta.storage_class = response.header("x-amz-storage-class").value_or("STANDARD");
  meta.updated = internal::parse_s3_time(response.header("last-modified").value_or(""));
  return meta;
}

class S3StoreImpl : public S3Store {
 public:
  explicit S3StoreImpl(std::shared_ptr<internal::S3Client> client) : client_(std::move(client)) {}

  std::string_view backend() const override { return "s3"; }
  std::string url(std::string_view bucket, std::string_view object) const override {
    return internal::s3_url(bucket, object);
  }

  StoreCapabilities capabilities() const override {
    StoreCapabilities caps;
    caps.server_end_offset = false;
    caps.multipart_upload = true;
    caps.min_part_size = internal::kS3MinPartSize;
    caps.max_parts = internal::kS3MaxParts;
    return caps;
  }

  const std::string& endpoint() const override { return client_->config().endpoint; }
  const std::string& region() const override { return client_->config().region; }

  absl::StatusOr<ListObjectsPage> list_objects(const ListObjectsRequest& request) override {
    const std::string context = absl::StrCat("LIST ", s3_url(request.bucket, request.prefix));
    S3Call call;
    call.bucket = request.bucket;
    call.query = internal::list_query(request);
    auto response = client_->execute(call, Idempotency::kIdempotent, context);
    if (!response.ok()) return response.status();
    return internal::parse_list_page(response->body, request, context);
  }

  absl::StatusOr<ObjectMetadata> get_object_metadata(const std::string& bucket,
                                                     const std::string& object) override {
    S3Call call;
    call.method = "HEAD";
    call.bucket = bucket;
    call.key = object;
    call.headers = {{"x-amz-checksum-mode", "ENABLED"}};
    auto response = client_->execute(call, Idempotency::kIdempotent,
                                     absl::StrCat("HEAD ", s3_url(bucket, object)));
    if (!response.ok()) return response.status();
    return metadata_from_headers(*response, bucket, object);
  }

  absl::StatusOr<ReadObjectResult> read_object(const ReadObjectRequest& request, char* buffer,
                                               std::size_t capacity) override {
    return internal::ObjectRead::run(read_protocol_, request,
                                     internal::ReadTarget::into(buffer, capacity));
  }

  absl::StatusOr<ReadObjectResult> read_object(const ReadObjectRequest& request,
                                               const ByteSink& sink) override {
    if (!sink) return absl::InvalidArgumentError("read_object: empty ByteSink");
    return internal::ObjectRead::run(read_protocol_, request, internal::ReadTarget::to(sink));
  }

  void read_object_async(const ReadObjectRequest& request, char* buffer, std::size_t capacity,
                         AsyncCallback<ReadObjectResult> done) override {
    internal::ObjectRead::start(read_protocol_, request,
                                internal::ReadTarget::into(buffer, capacity), std::move(done));
  }

  absl::StatusOr<ObjectMetadata> write_object(const WriteObjectRequest& request,
                                              std::string_view data) override {
    const std::string context = absl::StrCat("PUT ", s3_url(request.bucket, request.object));
    if (request.if_generation_match && *request.if_generation_match != 0) {
      return no_generations(context, *request.if_generation_match);
    }
    const std::uint32_t crc = request.crc32c.value_or(crc32c(data));
    const std::string md5_hex = internal::md5_hex_of(data);
    S3Call call;
    call.method = "PUT";
    call.bucket = request.bucket;
    call.key = request.object;
    call.headers = {{"Content-Type", request.content_type},
                    {"Content-MD5", internal::md5_base64_of(data)},
                    {"x-amz-checksum-crc32c", crc32c_to_base64(crc)}};
    if (request.if_generation_match) call.headers.emplace_back("If-None-Match", "*");
    call.body_view = data;
    call.sign_payload = false;  // Content-MD5 and the CRC32C protect the bytes
    auto response = client_->execute(call, Idempotency::kIdempotent, context);
    if (!response.ok()) {
      // A 412 to If-None-Match: * may answer a re-send (ours or libcurl's) whose first copy was
      // applied and its reply lost: the live object is ours when it has exactly our size and
      // CRC32C.
      if (auto ours = internal::ours_despite_conflict(*this, request.bucket, request.object,
                                                      data.size(), crc, response.status())) {
        return *ours;
      }
      return response.status();
    }
    // The server checked Content-MD5; a plain ETag is the MD5 of what it stored (not with
    // SSE-KMS, whose ETags are opaque).
    const std::string quoted_etag = response->header("etag").value_or("");
    std::string etag = quoted_etag;
    if (etag.size() >= 2 && etag.front() == '"') etag = etag.substr(1, etag.size() - 2);
    const bool kms = response->header("x-amz-server-side-encryption").value_or("") == "aws:kms";
    std::string loss;
    if (!kms && etag.size() == 32 && etag != md5_hex) {
      loss = absl::StrCat("the server's ETag ", etag, " is not the MD5 of the data sent (", md5_hex,
                          ")");
    } else if (auto echoed = internal::full_object_crc32c(*response); echoed && *echoed != crc) {
      loss = absl::StrCat("the server stored CRC32C ", crc32c_to_base64(*echoed), " but ",
                          crc32c_to_base64(crc), " was sent");
    }
    if (!loss.empty()) {
      // Other bytes than were sent: the name must not keep them.
      DeleteObjectRequest remove;
      remove.bucket = request.bucket;
      remove.object = request.object;
      const absl::Status deleted = delete_object(remove);
      return absl::DataLossError(
          absl::StrCat(context, ": ", loss, "; ",
                       deleted.ok() ? "the object was deleted"
                                    : absl::StrCat("deleting it failed too: ", deleted.message())));
    }
    ObjectMetadata meta;
    meta.bucket = request.bucket;
    meta.name = request.object;
    meta.size = data.size();
    meta.crc32c = crc;
    meta.md5_hash = internal::md5_base64_from_etag(md5_hex);
    meta.etag = quoted_etag;  // what reads of this version pin to (If-Match)
    meta.content_type = request.content_type;
    meta.updated = std::chrono::system_clock::now();
    return meta;
  }

  absl::StatusOr<std::unique_ptr<WriteSession>> start_resumable_write(
      const WriteObjectRequest& request) override {
    return absl::UnimplementedError(absl::StrCat("resumable writes to ",
                                                 s3_url(request.bucket, request.object),
                                                 ": S3 has none; use start_multipart_upload"));
  }
  absl::StatusOr<std::unique_ptr<WriteSession>> resume_resumable_write(
      const WriteObjectRequest& request, const std::string&) override {
    return start_resumable_write(request);
  }

  absl::StatusOr<std::unique_ptr<MultipartUpload>> start_multipart_upload(
      const WriteObjectRequest& request) override {
    return internal::S3MultipartUpload::create(client_, request);
  }

  absl::StatusOr<ObjectMetadata> compose_object(const ComposeObjectRequest& request) override {
    return absl::UnimplementedError(
        absl::StrCat("compose into ", s3_url(request.bucket, request.destination),
                     ": S3 has no compose; use start_multipart_upload"));
  }

  absl::StatusOr<ObjectMetadata> copy_object(const CopyObjectRequest& request) override {
    const std::string context =
        absl::StrCat("COPY ", s3_url(request.source_bucket, request.source_object), " to ",
                     s3_url(request.destination_bucket, request.destination_object));
    if (request.source_generation) return no_generations(context, *request.source_generation);
    if (request.if_generation_match && *request.if_generation_match != 0) {
      return no_generations(context, *request.if_generation_match);
    }
    S3Call call;
    call.method = "PUT";
    call.bucket = request.destination_bucket;
    call.key = request.destination_object;
    call.headers = {
        {"x-amz-copy-source", absl::StrCat("/", request.source_bucket, "/",
                                           internal::percent_encode(request.source_object, true))}};
    if (request.if_generation_match) call.headers.emplace_back("If-None-Match", "*");
    internal::RetryState retry(client_->options().retry, Idempotency::kIdempotent);
    std::function<absl::StatusOr<internal::HttpResponse>(int)> attempt =
        [&](int) -> absl::StatusOr<internal::HttpResponse> {
      internal::HttpResponse response = client_->transport().send(client_->new_request(call));
      if (auto s = client_->check(response, context); !s.ok()) return s;
      // CopyObject can fail after its 200 status line; the body then holds an <Error>.
      if (auto s = internal::embedded_error(response.body, context); !s.ok()) return s;
      return response;
    };
    auto response = internal::retry_loop<internal::HttpResponse>(retry, attempt);
    if (!response.ok()) return response.status();
    return get_object_metadata(request.destination_bucket, request.destination_object);
  }

  // S3 answers 204 whether or not the key existed, so a missing object is not an error.
  absl::Status delete_object(const DeleteObjectRequest& request) override {
    const std::string context = absl::StrCat("DELETE ", s3_url(request.bucket, request.object));
    if (request.if_generation_match) return no_generations(context, *request.if_generation_match);
    S3Call call;
    call.method = "DELETE";
    call.bucket = request.bucket;
    call.key = request.object;
    return client_->execute(call, Idempotency::kIdempotent, context).status();
  }

  // ListMultipartUploads under `prefix`, every page.
  absl::StatusOr<std::vector<PendingUpload>> list_pending_uploads(
      const std::string& bucket, const std::string& prefix) override {
    const std::string context =
        absl::StrCat("ListMultipartUploads ", internal::s3_url(bucket, prefix));
    std::vector<PendingUpload> out;
    std::string key_marker, id_marker;
    for (;;) {
      S3Call call;
      call.bucket = bucket;
      call.query = {{"uploads", ""}, {"prefix", prefix}};
      if (!key_marker.empty()) {
        call.query.emplace_back("key-marker", key_marker);
        call.query.emplace_back("upload-id-marker", id_marker);
      }
      auto response = client_->execute(call, Idempotency::kIdempotent, context);
      if (!response.ok()) return response.status();
      auto doc = internal::parse_xml(response->body);
      if (!doc.ok()) return internal::annotate(doc.status(), context);
      for (const auto* u : doc->children_named("Upload")) {
        PendingUpload p;
        p.object = u->child_text("Key");
        p.id = u->child_text("UploadId");
        p.started = internal::parse_s3_time(u->child_text("Initiated"));
        out.push_back(std::move(p));
      }
      if (doc->child_text("IsTruncated") != "true") return out;
      key_marker = doc->child_text("NextKeyMarker");
      id_marker = doc->child_text("NextUploadIdMarker");
      if (key_marker.empty()) {
        return absl::InternalError(absl::StrCat(context, ": a truncated page without a marker"));
      }
    }
  }

  absl::Status abort_pending_upload(const std::string& bucket,
                                    const PendingUpload& upload) override {
    S3Call call;
    call.method = "DELETE";
    call.bucket = bucket;
    call.key = upload.object;
    call.query = {{"uploadId", upload.id}};
    auto response = client_->execute(
        call, Idempotency::kIdempotent,
        absl::StrCat("AbortMultipartUpload ", internal::s3_url(bucket, upload.object)));
    // Gone already (completed or aborted meanwhile): nothing left to abort.
    if (response.status().code() == absl::StatusCode::kNotFound) return absl::OkStatus();
    return response.status();
  }

  absl::Status delete_objects(const std::string& bucket,
                              const std::vector<std::string>& objects) override {
    for (std::size_t begin = 0; begin < objects.size(); begin += kDeleteBatch) {
      const std::size_t end = std::min(objects.size(), begin + kDeleteBatch);
      const std::string context = absl::StrCat("DeleteObjects ", s3_url(bucket, ""), " (",
                                               end - begin, " keys from ", objects[begin], ")");
      std::string body =
          "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>";
      for (std::size_t i = begin; i < end; ++i) {
        absl::StrAppend(&body, "<Object><Key>", internal::xml_escape(objects[i]),
                        "</Key></Object>");
      }
      absl::StrAppend(&body, "</Delete>");
      S3Call call;
      call.method = "POST";
      call.bucket = bucket;
      call.query = {{"delete", ""}};
      call.headers = {{"Content-Type", "application/xml"},
                      {"Content-MD5", internal::md5_base64_of(body)}};
      call.body = std::move(body);
      auto response = client_->execute(call, Idempotency::kIdempotent, context);
      if (!response.ok()) return response.status();
      auto doc = internal::parse_xml(response->body);
      if (!doc.ok()) return internal::annotate(doc.status(), context);
      if (const internal::XmlElement* error = doc->child("Error")) {
        const std::string code = error->child_text("Code");
        if (code != "NoSuchKey") {
          return absl::Status(internal::status_code_for_s3_error(code, 500),
                              absl::StrCat(context, ": ", s3_url(bucket, error->child_text("Key")),
                                           ": ", code, ": ", error->child_text("Message")));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status create_bucket(const std::string& bucket) override {
    S3Call call;
    call.method = "PUT";
    call.bucket = bucket;
    if (client_->config().region != "us-east-1") {
      call.headers = {{"Content-Type", "application/xml"}};
      call.body = absl::StrCat(
          "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
          "<LocationConstraint>",
          internal::xml_escape(client_->config().region),
          "</LocationConstraint></CreateBucketConfiguration>");
    }
    return client_
        ->execute(call, Idempotency::kNonIdempotent, absl::StrCat("CreateBucket ", bucket))
        .status();
  }

  absl::Status delete_bucket(const std::string& bucket) override {
    S3Call call;
    call.method = "DELETE";
    call.bucket = bucket;
    return client_->execute(call, Idempotency::kIdempotent, absl::StrCat("DeleteBucket ", bucket))
        .status();
  }

 private:
  std::shared_ptr<internal::S3Client> client_;
  std::shared_ptr<internal::S3ReadProtocol> read_protocol_ =
      std::make_shared<internal::S3ReadProtocol>(client_);
};

}  // namespace

absl::StatusOr<std::shared_ptr<S3Store>> make_s3_store(S3Options options) {
  auto client = internal::S3Client::create(std::move(options));
  if (!client.ok()) return client.status();
  return std::shared_ptr<S3Store>(std::make_shared<S3StoreImpl>(*std::move(client)));
}

}  // namespace dataflux
