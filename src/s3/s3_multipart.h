// S3MultipartUpload: the MultipartUpload interface on S3's native multipart upload
// (CreateMultipartUpload / UploadPart / CompleteMultipartUpload / AbortMultipartUpload).
//
// Every part carries its CRC32C (x-amz-checksum-crc32c, upload created with
// x-amz-checksum-algorithm CRC32C): the server rejects a part whose bytes do not match it, and
// the CRC32C it echoes is compared too. complete() lists the parts with their ETags and
// checksums; the object's full CRC32C is combined from the parts' (no second pass).
//
//   auto upload = S3MultipartUpload::create(client, request).value();
//   upload->upload_part(2, second);   // any order, from several threads
//   upload->upload_part(1, first);
//   auto meta = upload->complete();   // the object appears now, atomically
#ifndef DATAFLUX_SRC_S3_S3_MULTIPART_H_
#define DATAFLUX_SRC_S3_S3_MULTIPART_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "dataflux/object_store.h"
#include "s3/s3_client.h"

namespace dataflux::internal {

inline constexpr std::uint64_t kS3MinPartSize = 5ull << 20;
inline constexpr std::uint64_t kS3MaxPartSize = 5ull << 30;
inline constexpr int kS3MaxParts = 10000;

// The body of CompleteMultipartUpload for parts (number → ETag, base64 CRC32C or "").
struct CompletedPart {
  int number = 0;
  std::string etag;
  std::string crc32c_base64;
};
std::string complete_multipart_body(const std::vector<CompletedPart>& parts);

class S3MultipartUpload : public MultipartUpload {
 public:
  static absl::StatusOr<std::unique_ptr<MultipartUpload>> create(std::shared_ptr<S3Client> client,
                                                                 const WriteObjectRequest& request);
  ~S3MultipartUpload() override;  // aborts unless completed or aborted

  absl::Status upload_part(int number, std::string_view data) override;
  absl::StatusOr<ObjectMetadata> complete() override;
  absl::Status abort() override;

  const std::string& upload_id() const { return upload_id_; }

 private:
  // After a lost reply: whether the live object has exactly this size and CRC32C.
  bool applied_before(std::uint64_t size, const std::string& crc_base64);

  struct Part {
    std::string etag;
    std::uint64_t size = 0;
    std::uint32_t crc32c = 0;
  };
  S3MultipartUpload(std::shared_ptr<S3Client> client, WriteObjectRequest request,
                    std::string upload_id);
  std::string context() const;

  std::shared_ptr<S3Client> client_;
  const WriteObjectRequest request_;
  const std::string upload_id_;
  std::mutex mu_;
  std::map<int, Part> parts_;  // guarded by mu_
  bool finished_ = false;      // guarded by mu_: completed or aborted
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_S3_S3_MULTIPART_H_
