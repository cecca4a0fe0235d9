// How GCS reads object media: the ReadProtocol that ObjectRead (src/http/object_read.h), the
// one read state machine, runs for gs:// reads.
//
// GCS specifics only: the /download URL with alt=media, the generation pin (x-goog-generation
// of the first response, sent as `generation=` on every later attempt), x-goog-hash and
// x-goog-stored-content-length, OAuth tokens and their refresh after a 401. Every read sends
// `Accept-Encoding: gzip`, as Google's own clients do, so an object stored with
// Content-Encoding: gzip is served as stored (its CRC32C checks, Range is honoured) rather
// than decompressed; a response that was decompressed anyway is refused, never delivered.
//
//   auto result = ObjectRead::run(std::make_shared<GcsReadProtocol>(client), request,
//                                 ReadTarget::into(buffer, capacity));
#ifndef DATAFLUX_SRC_GCS_GCS_READ_H_
#define DATAFLUX_SRC_GCS_GCS_READ_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gcs/gcs_client.h"
#include "http/object_read.h"

namespace dataflux::internal {

// The crc32c in x-goog-hash values ("crc32c=AAAAAA==,md5=..." or one per header line).
std::optional<std::uint32_t> crc32c_from_hash_headers(const std::vector<std::string>& values);

class GcsReadProtocol : public ReadProtocol {
 public:
  explicit GcsReadProtocol(std::shared_ptr<GcsClient> client) : client_(std::move(client)) {}

  HttpTransport& transport() override { return client_->transport(); }
  const RetryOptions& retry_options() const override { return client_->options().retry; }
  std::string url(const ReadObjectRequest& request) const override;
  bool may_block() const override { return true; }  // authorize() may fetch a token
  // gs:// reads pin to a generation; an ETag pin is S3's and is refused, not ignored.
  absl::Status validate(const ReadObjectRequest& request) const override {
    if (request.etag.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("GET ", url(request), ": gs:// reads pin to a generation, not to an ETag (",
                     request.etag, " was given)"));
  }
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
  bool refresh_after_unauthorized(const HttpResponse& response, std::string_view sent_authorization,
                                  bool* refreshed) override {
    return client_->refresh_after_unauthorized(response, sent_authorization, refreshed);
  }

 private:
  std::shared_ptr<GcsClient> client_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_GCS_GCS_READ_H_
