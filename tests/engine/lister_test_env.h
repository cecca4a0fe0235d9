// Shared by the listing tests: an emulator-backed fixture (from tests/gcs) plus a store
// decorator that can hide the server-side end offset (as S3 lacks it) or report storage
// classes, and helpers to compare listings.
#ifndef DATAFLUX_TESTS_ENGINE_LISTER_TEST_ENV_H_
#define DATAFLUX_TESTS_ENGINE_LISTER_TEST_ENV_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dataflux/listing.h"
#include "gcs/gcs_test_env.h"

namespace dataflux::testing {

// Forwards to another store, optionally changing what it reports.
class TweakedStore : public ObjectStore {
 public:
  explicit TweakedStore(std::shared_ptr<ObjectStore> base) : base_(std::move(base)) {}

  bool hide_end_offset = false;  // report no server end offset and drop it from requests
  std::function<std::string(const std::string&)> storage_class;  // name → class
  std::function<void()> on_call;  // run at the start of list_objects and write_object

  std::string_view backend() const override { return base_->backend(); }
  std::string url(std::string_view bucket, std::string_view object) const override {
    return base_->url(bucket, object);
  }
  StoreCapabilities capabilities() const override {
    auto c = base_->capabilities();
    if (hide_end_offset) c.server_end_offset = false;
    return c;
  }
  absl::StatusOr<ListObjectsPage> list_objects(const ListObjectsRequest& request) override {
    if (on_call) on_call();
    ListObjectsRequest r = request;
    if (hide_end_offset) r.end_offset.clear();
    auto page = base_->list_objects(r);
    if (page.ok() && storage_class) {
      for (auto& o : page->objects) o.storage_class = storage_class(o.name);
    }
    return page;
  }
  absl::StatusOr<ObjectMetadata> get_object_metadata(const std::string& bucket,
                                                     const std::string& object) override {
    return base_->get_object_metadata(bucket, object);
  }
  absl::StatusOr<ReadObjectResult> read_object(const ReadObjectRequest& request, char* buffer,
                                               std::size_t capacity) override {
    return base_->read_object(request, buffer, capacity);
  }
  absl::StatusOr<ReadObjectResult> read_object(const ReadObjectRequest& request,
                                               const ByteSink& sink) override {
    return base_->read_object(request, sink);
  }
  absl::StatusOr<ObjectMetadata> write_object(const WriteObjectRequest& request,
                                              std::string_view data) override {
    if (on_call) on_call();
    return base_->write_object(request, data);
  }
  absl::StatusOr<std::unique_ptr<WriteSession>> start_resumable_write(
      const WriteObjectRequest& request) override {
    return base_->start_resumable_write(request);
  }
  absl::StatusOr<std::unique_ptr<WriteSession>> resume_resumable_write(
      const WriteObjectRequest& request, const std::string& session_id) override {
    return base_->resume_resumable_write(request, session_id);
  }
  absl::StatusOr<ObjectMetadata> compose_object(const ComposeObjectRequest& request) override {
    return base_->compose_object(request);
  }
  absl::StatusOr<ObjectMetadata> copy_object(const CopyObjectRequest& request) override {
    return base_->copy_object(request);
  }
  absl::Status delete_object(const DeleteObjectRequest& request) override {
    return base_->delete_object(request);
  }

 private:
  std::shared_ptr<ObjectStore> base_;
};

struct Row {
  std::string name;
  std::uint64_t size;
  std::int64_t generation;
  std::optional<std::uint32_t> crc32c;
  bool operator==(const Row& o) const {
    return name == o.name && size == o.size && generation == o.generation && crc32c == o.crc32c;
  }
};

inline std::ostream& operator<<(std::ostream& os, const Row& r) {
  return os << "{" << ::testing::PrintToString(r.name) << ", " << r.size << "}";
}

inline std::vector<Row> rows(const Listing& listing) {
  std::vector<Row> out;
  for (const auto& e : listing)
    out.push_back({std::string(e.name), e.size, e.generation, e.crc32c});
  return out;
}

}  // namespace dataflux::testing

#endif  // DATAFLUX_TESTS_ENGINE_LISTER_TEST_ENV_H_
