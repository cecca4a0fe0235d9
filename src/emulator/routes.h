// The GCS JSON API routes: which operation a request is (for faults and counters), and
// executing it against the Store into a Reply that the server then delivers (possibly with
// a fault or bandwidth pacing applied to its body).
#ifndef DATAFLUX_SRC_EMULATOR_ROUTES_H_
#define DATAFLUX_SRC_EMULATOR_ROUTES_H_

#include <httplib.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "emulator/emulator.h"
#include "emulator/fields.h"
#include "emulator/store.h"
#include "emulator/uploads.h"

namespace dataflux::emulator::internal {

struct Reply {
  int status = 200;
  std::string content_type = "application/json; charset=UTF-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Media: [offset, offset + length) of `blob` is the body instead of `body`.
  std::shared_ptr<const Blob> blob;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool chunked = false;  // send without Content-Length (chunked transfer coding)
};

// Rewrites a media reply as a range fault (Fault::kIgnoreRange, kShiftRange, kLongRange) asks,
// keeping its Content-Range true to the bytes sent. False when `fault` is not a range fault
// (or `reply` is no ranged media reply), which leaves `reply` as it was.
bool apply_range_fault(const Fault& fault, Reply* reply);
Reply error_reply(int http_status, const std::string& message);
Reply status_reply(const absl::Status& status);

enum class RouteKind {
  kBucketList,
  kBucketInsert,
  kBucketGet,
  kBucketDelete,
  kBucketStorageLayout,
  kBucketTestIamPermissions,
  kObjectList,
  kObjectGet,
  kObjectMedia,
  kObjectDelete,
  kObjectPatch,
  kObjectCompose,
  kObjectCopy,
  kObjectRewrite,
  kUploadStart,
  kUploadChunk,
  kUploadCancel,
};

struct Route {
  RouteKind kind = RouteKind::kBucketList;
  std::string operation;  // e.g. "objects.media": the fault queue and counter it uses
  std::string bucket;
  std::string object;
  std::string dst_bucket;
  std::string dst_object;
};

// nullopt for a request no route serves. `segments` are the decoded path segments.
std::optional<Route> resolve_route(const httplib::Request& req,
                                   const std::vector<std::string>& segments);

class ObjectService {
 public:
  ObjectService(Store* store, Uploads* uploads, std::string endpoint,
                std::uint64_t max_object_bytes)
      : store_(store),
        uploads_(uploads),
        endpoint_(std::move(endpoint)),
        max_object_bytes_(max_object_bytes) {}

  Reply execute(const Route& route, const httplib::Request& req);

 private:
  // `fields`: the request's `fields=` selector, parsed once by execute(); replies that carry
  // an object resource keep only the members it selects.
  Reply object_reply(const ObjectRecord& object, const FieldMask& fields) const;
  Reply bucket_insert(const httplib::Request& req);
  Reply object_list(const Route& route, const httplib::Request& req, const FieldMask& fields);
  Reply object_get(const Route& route, const httplib::Request& req, bool media,
                   const FieldMask& fields);
  Reply object_delete(const Route& route, const httplib::Request& req);
  Reply object_patch(const Route& route, const httplib::Request& req, const FieldMask& fields);
  Reply object_compose(const Route& route, const httplib::Request& req, const FieldMask& fields);
  Reply object_copy(const Route& route, const httplib::Request& req, bool rewrite,
                    const FieldMask& fields);
  Reply upload_start(const Route& route, const httplib::Request& req, const FieldMask& fields);
  Reply upload_chunk(const httplib::Request& req, const FieldMask& fields);

  Store* const store_;
  Uploads* const uploads_;
  const std::string endpoint_;
  const std::uint64_t max_object_bytes_;
};

}  // namespace dataflux::emulator::internal

#endif  // DATAFLUX_SRC_EMULATOR_ROUTES_H_
