#include "s3/s3_read.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/byte_range.h"
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

absl::Status S3ReadProtocol::validate(const ReadObjectRequest& request) const {
  if (request.generation && *request.generation != 0) {
    return absl::InvalidArgumentError(absl::StrCat("GET ", url(request),
                                                   ": S3 objects have no generations (generation ",
                                                   *request.generation, " was requested)"));
  }
  if (!request.etag.empty() && request.etag.find_first_of("\r\n") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("GET ", url(request), ": an ETag cannot contain a line break"));
  }
  return absl::OkStatus();
}

absl::StatusOr<HttpRequest> S3ReadProtocol::media_request(const ReadObjectRequest& request,
                                                          const ReadPin& pin,
                                                          const std::optional<std::string>& range,
                                                          bool whole_checked) {
  S3Call call;
  call.method = "GET";
  call.bucket = request.bucket;
  call.key = request.object;
  if (range) call.headers.emplace_back("Range", *range);
  if (!pin.etag.empty()) call.headers.emplace_back("If-Match", pin.etag);
  if (whole_checked) call.headers.emplace_back("x-amz-checksum-mode", "ENABLED");
  return client_->new_request(call);
}

MediaHeaders S3ReadProtocol::parse_media_headers(const HttpResponse& head,
                                                 bool whole_object) const {
  MediaHeaders out;
  out.version.etag = head.header("etag").value_or("");
  if (whole_object) out.crc32c = full_object_crc32c(head);
  return out;
}

absl::StatusOr<HttpRequest> S3ReadProtocol::size_request(const ReadObjectRequest& request,
                                                         const ReadPin& /*pin*/) {
  S3Call call;
  call.method = "HEAD";
  call.bucket = request.bucket;
  call.key = request.object;
  return client_->new_request(call);
}

absl::StatusOr<ObjectSize> S3ReadProtocol::parse_size(const HttpResponse& response,
                                                      const ReadObjectRequest& /*request*/,
                                                      std::string_view context) const {
  auto size = parse_decimal_u64(response.header("content-length").value_or(""));
  if (!size) {
    return absl::InternalError(
        absl::StrCat(std::string(context), ": HEAD returned no Content-Length"));
  }
  ObjectSize out;
  out.size = *size;
  out.version.etag = response.header("etag").value_or("");
  return out;
}

}  // namespace dataflux::internal
