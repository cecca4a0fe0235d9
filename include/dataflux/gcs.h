// The Google Cloud Storage backend (JSON API).
//
// Honours STORAGE_EMULATOR_HOST (an emulator such as dataflux-emulator; requests are then
// anonymous), or an explicit endpoint (regional, Private Service Connect, an emulator), which
// gets credentials like Google's own unless `anonymous` is set. Object names are percent-encoded
// exactly as GCS expects; list and metadata requests ask only for the fields ObjectMetadata holds;
// whole-object reads are checked against the CRC32C in x-goog-hash.
//
//   dataflux::GcsOptions options;
//   options.endpoint = "http://127.0.0.1:9023";          // default: STORAGE_EMULATOR_HOST or GCS
//   auto store = dataflux::make_gcs_store(options).value();
//   auto meta = store->get_object_metadata("my-bucket", "train/0001.jpg");
#ifndef DATAFLUX_GCS_H_
#define DATAFLUX_GCS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "dataflux/credentials.h"
#include "dataflux/object_store.h"
#include "dataflux/retry.h"
#include "dataflux/transport.h"

namespace dataflux {

struct GcsOptions {
  // "https://storage.googleapis.com" unless STORAGE_EMULATOR_HOST is set (then that host, with
  // http:// added when it has no scheme). An explicit value here wins over both.
  std::string endpoint;
  // nullptr = Application Default Credentials built from `auth`, except anonymous for
  // STORAGE_EMULATOR_HOST when `auth` names no credentials file or JSON. An explicit endpoint
  // is never taken for an emulator: a custom endpoint of GCS must not lose its credentials.
  std::shared_ptr<Credentials> credentials;
  // Send no credentials at all (public buckets, an emulator at an explicit endpoint).
  bool anonymous = false;
  AuthOptions auth;            // how default credentials are found and refreshed
  std::string project;         // for bucket creation and listing buckets
  RetryOptions retry;          // per operation
  TransportOptions transport;  // used only when a new transport is created
  std::uint64_t resumable_chunk_size = 8ull << 20;  // rounded up to a multiple of 256 KiB
  std::string user_agent_suffix;                    // appended to "dataflux-cpp/<version>"
};

// A GCS ObjectStore that also manages buckets.
class GcsStore : public ObjectStore {
 public:
  virtual absl::Status create_bucket(const std::string& bucket) = 0;
  virtual absl::Status delete_bucket(const std::string& bucket) = 0;
  // The endpoint in use, e.g. "http://127.0.0.1:9023" or "https://storage.googleapis.com".
  virtual const std::string& endpoint() const = 0;
};

absl::StatusOr<std::shared_ptr<GcsStore>> make_gcs_store(GcsOptions options = {});

}  // namespace dataflux

#endif  // DATAFLUX_GCS_H_
