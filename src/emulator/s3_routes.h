// The S3 REST subset the emulator serves on the same port as the GCS JSON API (path-style
// addressing: /bucket/key): buckets, ListObjectsV2, HEAD/GET with Range and If-Match, PUT
// with Content-MD5 and x-amz-checksum-crc32c checks, CopyObject, DeleteObject(s), and
// multipart upload. Requests with a SigV4 Authorization header are verified against the
// configured access keys (wrong secret → 403 SignatureDoesNotMatch); unsigned requests are
// accepted only when allowed. Objects live in the same Store as GCS's, so one bucket is
// visible through both APIs.
#ifndef DATAFLUX_SRC_EMULATOR_S3_ROUTES_H_
#define DATAFLUX_SRC_EMULATOR_S3_ROUTES_H_

#include <httplib.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "emulator/emulator.h"
#include "emulator/routes.h"
#include "emulator/store.h"

namespace dataflux::emulator::internal {

enum class S3RouteKind {
  kListBuckets,
  kCreateBucket,
  kHeadBucket,
  kDeleteBucket,
  kListObjects,
  kDeleteObjects,
  kGetObject,
  kHeadObject,
  kPutObject,
  kCopyObject,
  kDeleteObject,
  kCreateMultipart,
  kUploadPart,
  kCompleteMultipart,
  kAbortMultipart,
  kListMultipartUploads,
};

struct S3Route {
  S3RouteKind kind = S3RouteKind::kListBuckets;
  std::string operation;  // "s3.get", "s3.put", ...: fault queue and counter
  std::string bucket;
  std::string key;
};

// nullopt for GCS, auth and control paths (and for S3 requests it does not serve).
std::optional<S3Route> resolve_s3_route(const httplib::Request& req,
                                        const std::vector<std::string>& segments);

// An S3-shaped XML error reply.
Reply s3_error_reply(int http_status, const std::string& code, const std::string& message,
                     const std::string& resource = "");

class S3Service {
 public:
  S3Service(Store* store, std::uint64_t max_object_bytes)
      : store_(store), max_object_bytes_(max_object_bytes) {}

  void set_config(S3Config config);
  // nullopt when the request may proceed; else the 403 to send.
  std::optional<Reply> authenticate(const httplib::Request& req) const;
  Reply execute(const S3Route& route, const httplib::Request& req);

 private:
  struct Part {
    std::string data;
    std::string md5_hex;
    std::uint32_t crc32c = 0;
  };
  struct Upload {
    std::string bucket;
    std::string key;
    std::string content_type;
    bool crc32c_algorithm = false;
    // x-amz-checksum-type: FULL_OBJECT: the object's checksum is the CRC32C of all its bytes
    // (checked against the one CompleteMultipartUpload sends), not a checksum of checksums.
    bool full_object = false;
    std::int64_t initiated_us = 0;
    std::map<int, Part> parts;
  };

  Reply list_buckets();
  Reply list_objects(const S3Route& route, const httplib::Request& req);
  Reply delete_objects(const S3Route& route, const httplib::Request& req);
  Reply get_object(const S3Route& route, const httplib::Request& req, bool head);
  Reply put_object(const S3Route& route, const httplib::Request& req);
  Reply copy_object(const S3Route& route, const httplib::Request& req);
  Reply delete_object(const S3Route& route);
  Reply create_multipart(const S3Route& route, const httplib::Request& req);
  Reply upload_part(const S3Route& route, const httplib::Request& req);
  Reply complete_multipart(const S3Route& route, const httplib::Request& req);
  Reply abort_multipart(const S3Route& route, const httplib::Request& req);
  Reply list_multipart_uploads(const S3Route& route, const httplib::Request& req);
  // The S3 error for a Store status about bucket/key (NoSuchBucket vs NoSuchKey...).
  Reply store_error(const absl::Status& status, const S3Route& route);

  Store* const store_;
  const std::uint64_t max_object_bytes_;
  mutable std::mutex mu_;
  S3Config config_;                        // guarded by mu_
  std::map<std::string, Upload> uploads_;  // guarded by mu_
  std::uint64_t next_upload_ = 0;          // guarded by mu_
};

}  // namespace dataflux::emulator::internal

#endif  // DATAFLUX_SRC_EMULATOR_S3_ROUTES_H_
