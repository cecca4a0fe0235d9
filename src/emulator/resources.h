// JSON resources as GCS writes them: objects, buckets, lists and error bodies.
#ifndef DATAFLUX_SRC_EMULATOR_RESOURCES_H_
#define DATAFLUX_SRC_EMULATOR_RESOURCES_H_

#include <string>
#include <vector>

#include "emulator/fields.h"
#include "emulator/store.h"

namespace dataflux::emulator::internal {

// storage#object; generation, metageneration and size are JSON strings, as on GCS. `fields`
// keeps only the members a request's `fields=` selected.
std::string object_json(const ObjectRecord& object, const std::string& endpoint,
                        const FieldMask& fields = FieldMask());
std::string bucket_json(const BucketRecord& bucket, const std::string& endpoint);
// buckets.getStorageLayout: a flat namespace in the bucket's location.
std::string storage_layout_json(const BucketRecord& bucket);
// buckets.testIamPermissions: every permission asked about is held.
std::string test_permissions_json(const std::vector<std::string>& permissions);
std::string bucket_list_json(const std::vector<BucketRecord>& buckets, const std::string& endpoint);
std::string object_list_json(const ListPage& page, const std::string& endpoint,
                             const FieldMask& fields = FieldMask());
// storage#rewriteResponse, always done in one call.
std::string rewrite_json(const ObjectRecord& object, const std::string& endpoint);

// {"error":{"code":N,"message":M,"errors":[{"domain":"global","reason":R,"message":M}]}}
std::string error_json(int http_status, const std::string& message);
// GCS's `reason` for an HTTP status: notFound, conditionNotMet, rateLimitExceeded...
const char* error_reason(int http_status);

}  // namespace dataflux::emulator::internal

#endif  // DATAFLUX_SRC_EMULATOR_RESOURCES_H_
