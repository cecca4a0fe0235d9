// How S3 reads object media: the ReadProtocol that ObjectRead (src/http/object_read.h), the
// one read state machine, runs for s3:// reads.
//
// S3 specifics only: a signed GET (SigV4), the ETag of the first response pinned with If-Match
// on every later attempt (an overwrite in between fails the read with FailedPrecondition
// instead of splicing two versions), and, for whole-object reads, the stored full-object
// CRC32C asked for with x-amz-checksum-mode (composite multipart checksums are not used).
//
//   auto result = ObjectRead::run(std::make_shared<S3ReadProtocol>(client), request,
//                                 ReadTarget::into(buffer, capacity));
#ifndef DATAFLUX_SRC_S3_S3_READ_H_
#define DATAFLUX_SRC_S3_S3_READ_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "dataflux/object_store.h"
#include "http/object_read.h"
#include "s3/s3_client.h"

namespace dataflux::internal {

// A full-object CRC32C from x-amz-checksum-crc32c; nullopt for composite (multipart
// "...-N") values and for anything malformed.
std::optional<std::uint32_t> full_object_crc32c(const HttpResponse& response);

class S3ReadProtocol : public ReadProtocol {
 public:
  explicit S3ReadProtocol(std::shared_ptr<S3Client> client) : client_(std::move(client)) {}

  HttpTransport& transport() override { return client_->transport(); }
  const RetryOptions& retry_options() const override { return client_->options().retry; }
  std::string url(const ReadObjectRequest& request) const override {
    return s3_url(request.bucket, request.object);
  }
  absl::Status validate(const ReadObjectRequest& request) const override;
  absl::StatusOr<HttpRequest> media_request(const ReadObjectRequest& request, const ReadPin& pin,
                                            const std::optional<std::string>& range,
                                            bool whole_checked) override;
  MediaHeaders parse_media_headers(const HttpResponse& head, bool whole_object) const override;
  absl::StatusOr<HttpRequest> size_request(const ReadObjectRequest& request,
                                           const ReadPin& pin) override;
  absl::StatusOr<ObjectSize> parse_size(const HttpResponse& response,
                                        const ReadObjectRequest& request,
                                        std::string_view context) const override;
  absl::Status check(const HttpResponse& response, std::string_view context) const override {
    return client_->check(response, context);
  }
  // A 412 to an If-Match read: the version first read was overwritten.
  bool version_gone(const HttpResponse& response, const ReadPin& pin) const override {
    return response.http_status == 412 && !pin.etag.empty();
  }

 private:
  std::shared_ptr<S3Client> client_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_S3_S3_READ_H_
