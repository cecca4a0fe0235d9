// Building blocks of the Uploader: part naming, a MultipartUpload made of temporary objects and
// compose (for stores without a native one), retried deletes, and a publish step that makes a
// write into the final name safe to retry.
#ifndef DATAFLUX_SRC_ENGINE_UPLOAD_PARTS_H_
#define DATAFLUX_SRC_ENGINE_UPLOAD_PARTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataflux/object_store.h"
#include "dataflux/upload.h"

namespace dataflux::internal {

// Temporary parts of `object` carry this infix: "<object>.dataflux-part-<id>-...".
inline constexpr char kPartInfix[] = ".dataflux-part-";

// True for names the uploader uses for temporary parts (listings of checkpoints skip them).
bool is_upload_part_name(const std::string& name);

// 16 random hex digits, unique per upload.
std::string new_upload_id();

// Deletes the temporary `object`, pinned to `generation` (looked up first when unknown on a
// store with generations), which makes the delete idempotent: the store's own retry layer
// retries it, and no second loop here multiplies its attempts. NotFound counts as done.
absl::Status delete_temporary(ObjectStore& store, const std::string& bucket,
                              const std::string& object, std::optional<std::int64_t> generation);

// Writes the final object with `write(precondition)`. Without a caller's precondition it
// pins the live generation first (0 when absent), so a retry after a lost reply cannot
// clobber a newer object; a 412 is then resolved by checking whether the live object is
// ours (same size and CRC32C).
absl::StatusOr<ObjectMetadata> publish(
    ObjectStore& store, const std::string& bucket, const std::string& object,
    std::optional<std::int64_t> if_generation_match, std::uint64_t size, std::uint32_t crc,
    const std::function<absl::StatusOr<ObjectMetadata>(std::optional<std::int64_t>)>& write);

// A MultipartUpload built from temporary objects composed into the final name. Parts are
// written with ifGenerationMatch=0 (safe to retry), checked against the server's CRC32C, and
// composed in a tree of at most max_compose_sources per request. Thread-safe.
class ComposeMultipartUpload : public MultipartUpload {
 public:
  ComposeMultipartUpload(std::shared_ptr<ObjectStore> store, WriteObjectRequest request,
                         UploadOptions options);
  ~ComposeMultipartUpload() override;

  absl::Status upload_part(int number, std::string_view data) override;
  absl::StatusOr<ObjectMetadata> complete() override;
  absl::Status abort() override;

  int leaked_parts() const;

 private:
  struct Part {
    std::string name;
    std::int64_t generation = 0;
    std::uint64_t size = 0;
    std::uint32_t crc = 0;
    bool uploaded = false;
  };
  std::string part_name(int number) const;
  // Deletes every temporary object this upload may have created.
  absl::Status cleanup();
  std::optional<std::int64_t> generation_of(const std::string& name) const;

  std::shared_ptr<ObjectStore> store_;
  WriteObjectRequest request_;
  UploadOptions options_;
  std::string id_;
  std::string url_;

  mutable std::mutex mu_;
  std::vector<Part> parts_;               // index = number - 1; guarded by mu_
  std::vector<std::string> temporaries_;  // every name ever attempted; guarded by mu_
  absl::flat_hash_map<std::string, std::int64_t> generations_;  // of those known; guarded by mu_
  bool done_ = false;  // completed or aborted; guarded by mu_
  int leaked_ = 0;     // guarded by mu_
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_ENGINE_UPLOAD_PARTS_H_
