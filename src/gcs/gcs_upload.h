// Uploads: the multipart body of a one-shot write, and GcsWriteSession, a GCS resumable upload.
//
// A session sends whole chunks (multiples of 256 KiB) with "Content-Range: bytes a-b/*" and
// keeps each chunk in memory until the server acknowledges it. After a transient failure it
// asks the server how much it has ("bytes */*" → 308 "Range: bytes=0-N") and resends from
// there, so a chunk failing half-way costs a resend, not the upload. finish() sends the tail
// with the total size and the whole object's CRC32C, and checks the stored checksum.
//
//   auto session = GcsWriteSession::start(client, request).value();
//   session->write(part1);  session->write(part2);
//   auto meta = session->finish();
#ifndef DATAFLUX_SRC_GCS_GCS_UPLOAD_H_
#define DATAFLUX_SRC_GCS_GCS_UPLOAD_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "dataflux/object_store.h"
#include "gcs/gcs_client.h"

namespace dataflux::internal {

// A multipart/related body: the JSON metadata part, then the media part. `boundary` must not
// occur in `data` (see pick_multipart_boundary).
std::string multipart_body(std::string_view boundary, std::string_view metadata_json,
                           std::string_view content_type, std::string_view data);
// A random boundary that does not occur in `data`.
std::string pick_multipart_boundary(std::string_view data);

// The number of bytes a 308 "Range: bytes=0-N" header says the server has (N + 1); 0 when the
// header is absent; nullopt when it is malformed.
std::optional<std::uint64_t> persisted_from_range_header(const std::optional<std::string>& value);

// The server stored other bytes than were sent (`loss` says how): deletes that generation, so
// the name does not keep a corrupt object, and returns `loss` saying whether it was removed.
absl::Status discard_stored(GcsClient& client, const ObjectMetadata& stored, absl::Status loss);

class GcsWriteSession : public WriteSession {
 public:
  static absl::StatusOr<std::unique_ptr<WriteSession>> start(std::shared_ptr<GcsClient> client,
                                                             const WriteObjectRequest& request);
  static absl::StatusOr<std::unique_ptr<WriteSession>> resume(std::shared_ptr<GcsClient> client,
                                                              const WriteObjectRequest& request,
                                                              const std::string& session_id);
  ~GcsWriteSession() override;

  const std::string& session_id() const override { return session_url_; }
  std::uint64_t persisted_size() const override;
  absl::Status write(std::string_view data) override;
  absl::StatusOr<ObjectMetadata> finish() override;
  absl::Status cancel() override;

 private:
  GcsWriteSession(std::shared_ptr<GcsClient> client, const WriteObjectRequest& request,
                  std::string session_url);

  // kDetached: never reached the server; the destructor leaves the session alone.
  enum class State { kOpen, kFinished, kCancelled, kFailed, kDetached };

  // PUTs `data` (the bytes from persisted_ on) as one request, resuming after transient
  // failures. Non-final: returns once the server acknowledged some prefix (persisted_ moved).
  // Final: returns once the object exists, with its metadata in *finished.
  absl::Status send(std::string_view data, bool final, std::optional<ObjectMetadata>* finished);
  // The 'bytes */*' status query; a 200/201 answer means the upload is already complete.
  absl::StatusOr<HttpResponse> query_status();
  // Applies a 308 (moves persisted_) or a 200/201 (fills *finished).
  absl::Status apply_progress(const HttpResponse& response,
                              std::optional<ObjectMetadata>* finished);
  absl::StatusOr<ObjectMetadata> verify_finished(ObjectMetadata metadata) const;
  absl::Status cancel_locked();

  std::shared_ptr<GcsClient> client_;
  WriteObjectRequest request_;
  std::string session_url_;
  std::string context_;
  std::uint64_t chunk_size_;

  mutable std::mutex mu_;
  State state_ = State::kOpen;
  std::uint64_t persisted_ = 0;  // bytes the server acknowledged
  std::string buffer_;           // bytes from persisted_ on, not yet acknowledged
  std::uint32_t crc_ = 0;        // of every byte written, when crc_known_
  bool crc_known_ = true;        // false after resume: earlier bytes were never seen here
  std::optional<ObjectMetadata> finished_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_GCS_GCS_UPLOAD_H_
