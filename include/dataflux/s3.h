// The S3 backend: AWS S3 and S3-compatible stores (MinIO, Ceph RGW, CORTX, s3rver...).
//
// Requests are signed with AWS Signature Version 4 and run on the shared HTTP transport (many
// reads in flight on few threads). Credentials, region and endpoint come from S3Options, else
// from the variables and files the AWS CLI reads: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
// AWS_SESSION_TOKEN, AWS_PROFILE with ~/.aws/credentials and ~/.aws/config, AWS_REGION /
// AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL. Multipart upload is native
// (capabilities().multipart_upload); S3 has no generations or compose.
//
//   dataflux::S3Options options;
//   options.endpoint = "http://127.0.0.1:9000";             // MinIO; default: AWS
//   options.access_key_id = "minioadmin";  options.secret_access_key = "minioadmin";
//   auto store = dataflux::make_s3_store(options).value();
//   auto page = store->list_objects({"data", "train/"});         // bucket, prefix
#ifndef DATAFLUX_S3_H_
#define DATAFLUX_S3_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataflux/object_store.h"
#include "dataflux/retry.h"
#include "dataflux/transport.h"

namespace dataflux {

enum class S3Addressing {
  kAuto,           // virtual-hosted on AWS endpoints for DNS-safe buckets, else path-style
  kPath,           // https://endpoint/bucket/key (MinIO, CORTX, emulators)
  kVirtualHosted,  // https://bucket.endpoint/key
};

struct S3Options {
  // "" = AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else https://s3.<region>.amazonaws.com.
  // A value without a scheme gets https://.
  std::string endpoint;
  // "" = AWS_REGION, else AWS_DEFAULT_REGION, else the profile's `region`, else "us-east-1".
  std::string region;
  // Explicit credentials win over the environment and the shared files.
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  // "" = AWS_PROFILE, else "default". Files: AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials)
  // and AWS_CONFIG_FILE (~/.aws/config).
  std::string profile;
  bool anonymous = false;  // send unsigned requests (public buckets)
  S3Addressing addressing = S3Addressing::kAuto;
  RetryOptions retry;          // per operation
  TransportOptions transport;  // used only when a new transport is created
  std::string user_agent_suffix;
};

// An S3 ObjectStore that also manages buckets and deletes in batches.
class S3Store : public ObjectStore {
 public:
  virtual absl::Status create_bucket(const std::string& bucket) = 0;
  virtual absl::Status delete_bucket(const std::string& bucket) = 0;
  // DeleteObjects: up to 1000 keys a request (more are split). Missing keys are not errors.
  virtual absl::Status delete_objects(const std::string& bucket,
                                      const std::vector<std::string>& objects) = 0;
  virtual const std::string& endpoint() const = 0;  // e.g. "https://s3.us-east-1.amazonaws.com"
  virtual const std::string& region() const = 0;
};

// Fails with InvalidArgument for a malformed endpoint and with FailedPrecondition when no
// credentials are found (the message says where it looked; set `anonymous` for public data).
absl::StatusOr<std::shared_ptr<S3Store>> make_s3_store(S3Options options = {});

}  // namespace dataflux

#endif  // DATAFLUX_S3_H_
