#include "dataflux/object_store.h"

#include "absl/strings/str_cat.h"
#include "core/thread_pool.h"

namespace dataflux {

void ObjectStore::read_object_async(const ReadObjectRequest& request, char* buffer,
                                    std::size_t capacity, AsyncCallback<ReadObjectResult> done) {
  internal::ThreadPool::blocking().run([this, request, buffer, capacity, done = std::move(done)] {
    done(read_object(request, buffer, capacity));
  });
}

absl::StatusOr<std::vector<PendingUpload>> ObjectStore::list_pending_uploads(
    const std::string& /*bucket*/, const std::string& /*prefix*/) {
  return std::vector<PendingUpload>();
}

absl::Status ObjectStore::abort_pending_upload(const std::string& bucket,
                                               const PendingUpload& upload) {
  return absl::UnimplementedError(absl::StrCat("the ", std::string(backend()),
                                               " store has no pending uploads to abort (",
                                               url(bucket, upload.object), ")"));
}

absl::StatusOr<std::unique_ptr<MultipartUpload>> ObjectStore::start_multipart_upload(
    const WriteObjectRequest& request) {
  return absl::UnimplementedError(absl::StrCat("the ", std::string(backend()),
                                               " store has no native multipart upload (writing ",
                                               request.bucket, "/", request.object, ")"));
}

}  // namespace dataflux
