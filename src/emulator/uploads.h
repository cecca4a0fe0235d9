// Resumable upload sessions: chunks with Content-Range, status queries, resume by overlap,
// finalization into the Store, cancellation.
#ifndef DATAFLUX_SRC_EMULATOR_UPLOADS_H_
#define DATAFLUX_SRC_EMULATOR_UPLOADS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "emulator/store.h"

namespace dataflux::emulator::internal {

// Non-final chunks must be multiples of this, as on GCS.
inline constexpr std::uint64_t kChunkQuantum = 256 * 1024;

struct UploadTarget {
  std::string bucket;
  std::string name;
  NewObject meta;
  Preconditions pre;
};

struct ChunkOutcome {
  bool complete = false;  // true: 200 with `object`; false: 308 with `persisted`
  std::uint64_t persisted = 0;
  std::optional<ObjectRecord> object;
};

class Uploads {
 public:
  Uploads(Store* store, std::uint64_t max_object_bytes)
      : store_(store), max_object_bytes_(max_object_bytes) {}

  std::string start(UploadTarget target);  // the upload_id
  // One PUT to the session URL. `content_range` empty = the whole object in one request.
  // `goog_hash` is the x-goog-hash header (verified when the upload completes).
  absl::StatusOr<ChunkOutcome> put(const std::string& upload_id, const std::string& content_range,
                                   std::string_view body, const std::string& goog_hash);
  absl::Status cancel(const std::string& upload_id);

 private:
  struct Session {
    std::mutex mu;
    UploadTarget target;
    std::string data;
    std::optional<ObjectRecord> result;
  };
  std::shared_ptr<Session> find(const std::string& upload_id);
  absl::StatusOr<ChunkOutcome> finish(const std::string& upload_id, Session& session,
                                      std::uint64_t total, const std::string& goog_hash);

  Store* const store_;
  const std::uint64_t max_object_bytes_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  std::uint64_t next_id_ = 0;
};

}  // namespace dataflux::emulator::internal

#endif  // DATAFLUX_SRC_EMULATOR_UPLOADS_H_
