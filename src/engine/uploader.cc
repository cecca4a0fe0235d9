// The Uploader: cuts a byte stream into parts, keeps at most K part buffers alive, uploads them
// K at a time on the blocking pool through a MultipartUpload (native, or compose-based), and
// publishes on commit.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/io_buffer.h"
#include "core/retry_policy.h"
#include "core/thread_pool.h"
#include "dataflux/crc32c.h"
#include "dataflux/upload.h"
#include "engine/upload_parts.h"

namespace dataflux {
namespace {

constexpr int kDefaultMaxParts = 10000;

class PartUploader : public Uploader {
 public:
  PartUploader(std::shared_ptr<ObjectStore> store, std::string bucket, std::string object,
               UploadOptions options)
      : store_(std::move(store)),
        caps_(store_->capabilities()),
        options_(std::move(options)),
        url_(store_->url(bucket, object)) {
    request_.bucket = std::move(bucket);
    request_.object = std::move(object);
    request_.content_type = options_.content_type;
    request_.if_generation_match = options_.if_generation_match;
    options_.max_parts_in_flight = std::max(1, options_.max_parts_in_flight);
  }
  ~PartUploader() override {
    if (finished_) return;
    internal::RetryBudgetScope budget(internal::destructor_budget());  // the rest is cleanup's
    (void)abort();
  }

  absl::Status write(const void* data, std::size_t size) override {
    if (finished_) return over();
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      if (!current_.data) {
        if (absl::Status s = acquire(upload_part_size(options_, caps_, next_number_)); !s.ok()) {
          return s;
        }
      }
      const std::size_t n = static_cast<std::size_t>(
          std::min<std::uint64_t>(size, current_.capacity - current_.size));
      std::memcpy(current_.data.get() + current_.size, p, n);
      current_.size += n;
      total_ += n;
      p += n;
      size -= n;
      if (current_.size == current_.capacity) {
        if (absl::Status s = submit(); !s.ok()) return s;
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

  absl::StatusOr<ObjectMetadata> commit() override {
    if (finished_) return over();
    absl::Status early;
    {
      std::lock_guard<std::mutex> lock(mu_);
      early = error_;
    }
    if (!early.ok()) {
      (void)abort();
      return early;
    }
    if (!mpu_) return commit_single();
    if (current_.size > 0) (void)submit();
    parts_.wait();
    absl::Status error;
    {
      std::lock_guard<std::mutex> lock(mu_);
      error = error_;
    }
    if (!error.ok()) {
      (void)abort();
      return error;
    }
    finished_ = true;
    auto published = mpu_->complete();
    collect_leaks();
    if (!published.ok()) {
      (void)mpu_->abort();
      collect_leaks();
      return published.status();
    }
    std::uint32_t crc = 0;
    for (const auto& [part_crc, part_size] : part_crcs_) {
      crc = crc32c_combine(crc, part_crc, part_size);
    }
    const std::uint64_t total = total_.load();
    if (published->size != total || (published->crc32c && *published->crc32c != crc)) {
      return absl::DataLossError(absl::StrCat(
          "upload ", url_, ": the published object has ", published->size, " bytes, CRC32C ",
          published->crc32c ? crc32c_to_base64(*published->crc32c) : "none", "; ", total,
          " bytes with CRC32C ", crc32c_to_base64(crc), " were written"));
    }
    return published;
  }

  absl::Status abort() override {
    if (finished_) return absl::OkStatus();
    finished_ = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (error_.ok()) error_ = absl::CancelledError(absl::StrCat("upload ", url_, " aborted"));
      queue_.clear();  // their tasks find nothing to upload
    }
    parts_.wait();
    absl::Status s;
    if (mpu_) s = mpu_->abort();
    collect_leaks();
    return s;
  }

  UploadStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    UploadStats s = stats_;
    s.bytes = total_.load();
    return s;
  }
  const std::string& url() const override { return url_; }

 private:
  struct Buffer {
    internal::IoBuffer data;  // huge pages for large parts: filling them faults less
    std::uint64_t capacity = 0;
    std::uint64_t size = 0;
    int number = 0;
  };

  absl::Status over() const {
    return absl::FailedPreconditionError(
        absl::StrCat("upload ", url_, ": already committed or aborted"));
  }

  // Makes current_ a buffer of `capacity` bytes, waiting while K buffers are alive. When no pool
  // thread is working for this upload (the pool is busy elsewhere), it uploads a queued part
  // itself rather than wait on a pool that may not come; otherwise a part in flight frees a
  // buffer and wakes it.
  absl::Status acquire(std::uint64_t capacity) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (!error_.ok()) return error_;
      // Buffers of a smaller (older) part size are no use any more.
      while (!free_.empty() && free_.back().capacity != capacity) drop_free_back();
      if (!free_.empty()) {
        current_ = std::move(free_.back());
        free_.pop_back();
        break;
      }
      if (buffers_ < options_.max_parts_in_flight) {
        current_.data = internal::allocate_io_buffer(capacity);  // uninitialised
        if (!current_.data) {
          return absl::ResourceExhaustedError(
              absl::StrCat("upload ", url_, ": no memory for a part of ", capacity, " bytes"));
        }
        current_.capacity = capacity;
        ++buffers_;
        allocated_ += capacity;
        stats_.peak_buffered_bytes = std::max(stats_.peak_buffered_bytes, allocated_);
        break;
      }
      lock.unlock();
      const bool helped = parts_.run_one_if_stalled();
      lock.lock();
      if (helped) continue;
      // A pool thread is uploading our parts and takes the queued ones in turn: each part
      // ends by freeing its buffer and waking us.
      wake_.wait(lock, [&] { return !error_.ok() || !free_.empty(); });
    }
    current_.size = 0;
    current_.number = next_number_++;
    return absl::OkStatus();
  }

  void drop_free_back() {  // mu_ held
    --buffers_;
    allocated_ -= free_.back().capacity;
    free_.pop_back();
  }

  absl::Status start() {
    if (caps_.multipart_upload) {
      auto mpu = store_->start_multipart_upload(request_);
      if (!mpu.ok()) {
        return absl::Status(mpu.status().code(),
                            absl::StrCat("upload ", url_, ": ", mpu.status().message()));
      }
      mpu_ = *std::move(mpu);
      set_method("multipart");
    } else {
      auto compose = std::make_unique<internal::ComposeMultipartUpload>(store_, request_, options_);
      compose_ = compose.get();
      mpu_ = std::move(compose);
      set_method("compose");
    }
    return absl::OkStatus();
  }

  absl::Status submit() {
    if (!mpu_) {
      if (absl::Status s = start(); !s.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (error_.ok()) error_ = s;
        return s;
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    const int max_parts = caps_.max_parts > 0 ? caps_.max_parts : kDefaultMaxParts;
    if (current_.number > max_parts && error_.ok()) {
      error_ = absl::OutOfRangeError(absl::StrCat("upload ", url_, ": more than ", max_parts,
                                                  " parts; raise UploadOptions::part_size"));
    }
    if (!error_.ok()) return error_;
    queue_.push_back(std::move(current_));
    current_ = Buffer();
    parts_.run([this] { upload_one(); });
    return absl::OkStatus();
  }

  // One task per submitted part; it takes the oldest queued part (none after an abort).
  void upload_one() {
    std::unique_lock<std::mutex> lock(mu_);
    if (queue_.empty()) return;
    Buffer part = std::move(queue_.front());
    queue_.pop_front();
    absl::Status status;
    if (error_.ok()) {
      ++in_flight_;
      stats_.peak_parts_in_flight = std::max(stats_.peak_parts_in_flight, in_flight_);
      const std::uint64_t first = offset_of(part);
      lock.unlock();
      const std::string_view bytes(part.data.get(), part.size);
      const std::uint32_t crc = crc32c(bytes);
      try {
        status = mpu_->upload_part(part.number, bytes);
      } catch (const std::exception& e) {  // a store that throws fails the part, not the process
        status = absl::InternalError(absl::StrCat("the store threw: ", e.what()));
      } catch (...) {
        status = absl::InternalError("the store threw");
      }
      lock.lock();
      --in_flight_;
      if (status.ok()) {
        if (part_crcs_.size() < static_cast<std::size_t>(part.number)) {
          part_crcs_.resize(part.number);
        }
        part_crcs_[part.number - 1] = {crc, part.size};
        ++stats_.parts;
      } else if (error_.ok()) {
        error_ =
            absl::Status(status.code(),
                         absl::StrCat("upload ", url_, ": part ", part.number, " (bytes ", first,
                                      "-", first + part.size - 1, ") failed: ", status.message()));
      }
    }
    part.size = 0;
    free_.push_back(std::move(part));
    wake_.notify_all();
  }

  // Offset of a part's first byte: the sizes of parts before it follow the growth schedule.
  std::uint64_t offset_of(const Buffer& part) const {
    std::uint64_t offset = 0;
    for (int n = 1; n < part.number; ++n) offset += upload_part_size(options_, caps_, n);
    return offset;
  }

  absl::StatusOr<ObjectMetadata> commit_single() {
    finished_ = true;
    const std::string_view bytes(current_.data ? current_.data.get() : "", current_.size);
    const std::uint32_t crc = crc32c(bytes);
    set_method("single-request");
    auto result =
        internal::publish(*store_, request_.bucket, request_.object, request_.if_generation_match,
                          bytes.size(), crc, [&](std::optional<std::int64_t> precondition) {
                            WriteObjectRequest w = request_;
                            w.if_generation_match = precondition;
                            w.crc32c = crc;
                            return store_->write_object(w, bytes);
                          });
    current_ = Buffer();
    if (!result.ok()) {
      return absl::Status(result.status().code(),
                          absl::StrCat("upload ", url_, ": ", result.status().message()));
    }
    return result;
  }

  void set_method(const char* method) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.method = method;
  }

  void collect_leaks() {
    if (!compose_) return;
    std::lock_guard<std::mutex> lock(mu_);
    stats_.leaked_parts = compose_->leaked_parts();
  }

  std::shared_ptr<ObjectStore> store_;
  const StoreCapabilities caps_;
  UploadOptions options_;
  WriteObjectRequest request_;
  const std::string url_;

  // The writer's side (one thread).
  Buffer current_;
  int next_number_ = 1;
  // Written by the writer, read by stats() from any thread.
  std::atomic<std::uint64_t> total_{0};
  bool finished_ = false;
  std::unique_ptr<MultipartUpload> mpu_;
  internal::ComposeMultipartUpload* compose_ = nullptr;  // mpu_, when compose-based

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Buffer> queue_;  // full parts waiting for their task
  std::vector<Buffer> free_;  // uploaded buffers for reuse
  int buffers_ = 0;           // alive: being filled, queued, uploading or free
  std::uint64_t allocated_ = 0;
  int in_flight_ = 0;
  absl::Status error_;                                              // the first failure
  std::vector<std::pair<std::uint32_t, std::uint64_t>> part_crcs_;  // by number - 1
  UploadStats stats_;
  // Last: destroyed (waited for) first. K part uploads at once on the blocking pool.
  internal::TaskGroup parts_{internal::ThreadPool::blocking(),
                             std::max(1, options_.max_parts_in_flight)};
};

// One resumable session: sequential, the store's own chunking. On the local store this is a
// temporary file renamed into place.
class StreamUploader : public Uploader {
 public:
  StreamUploader(std::shared_ptr<ObjectStore> store, std::unique_ptr<WriteSession> session,
                 std::string url)
      : store_(std::move(store)), session_(std::move(session)), url_(std::move(url)) {
    stats_.method = "stream";
  }
  ~StreamUploader() override {
    if (finished_) return;
    internal::RetryBudgetScope budget(internal::destructor_budget());
    (void)abort();
  }

  absl::Status write(const void* data, std::size_t size) override {
    if (finished_) return absl::FailedPreconditionError(absl::StrCat("upload ", url_, " is over"));
    if (!error_.ok()) return error_;
    error_ = session_->write(std::string_view(static_cast<const char*>(data), size));
    if (error_.ok()) {
      bytes_ += size;
    } else {
      error_ = absl::Status(error_.code(), absl::StrCat("upload ", url_, " at byte ", bytes_.load(),
                                                        ": ", error_.message()));
    }
    return error_;
  }
  absl::StatusOr<ObjectMetadata> commit() override {
    if (finished_) return absl::FailedPreconditionError(absl::StrCat("upload ", url_, " is over"));
    if (!error_.ok()) {
      (void)abort();
      return error_;
    }
    finished_ = true;
    auto result = session_->finish();
    if (!result.ok()) {
      (void)session_->cancel();
      return absl::Status(result.status().code(),
                          absl::StrCat("upload ", url_, ": ", result.status().message()));
    }
    if (result->size != bytes_.load()) {
      return absl::DataLossError(absl::StrCat("upload ", url_, ": the object has ", result->size,
                                              " bytes but ", bytes_.load(), " were written"));
    }
    return result;
  }
  absl::Status abort() override {
    if (finished_) return absl::OkStatus();
    finished_ = true;
    return session_->cancel();
  }
  UploadStats stats() const override {
    UploadStats s = stats_;  // method only: set once, before any other thread can see us
    s.bytes = bytes_.load();
    return s;
  }
  const std::string& url() const override { return url_; }

 private:
  std::shared_ptr<ObjectStore> store_;
  std::unique_ptr<WriteSession> session_;
  std::string url_;
  bool finished_ = false;
  absl::Status error_;
  UploadStats stats_;
  std::atomic<std::uint64_t> bytes_{0};  // written by the writer, read by stats() anywhere
};

}  // namespace

std::uint64_t upload_part_size(const UploadOptions& options, const StoreCapabilities& caps,
                               int part_number) {
  const int max_parts = caps.max_parts > 0 ? caps.max_parts : kDefaultMaxParts;
  std::uint64_t base = std::max<std::uint64_t>({options.part_size, caps.min_part_size, 1});
  if (options.expected_size) {
    base = std::max<std::uint64_t>(base, (*options.expected_size + max_parts - 1) / max_parts);
  }
  const std::uint64_t cap = std::max(base, options.max_part_size);
  std::uint64_t size = base;
  if (options.part_size_growth_every > 0) {
    for (int d = (part_number - 1) / options.part_size_growth_every; d > 0 && size < cap; --d) {
      size *= 2;
    }
  }
  return std::min(size, cap);
}

absl::StatusOr<std::unique_ptr<Uploader>> Uploader::create(std::shared_ptr<ObjectStore> store,
                                                           std::string bucket, std::string object,
                                                           UploadOptions options) {
  if (!store) return absl::InvalidArgumentError("Uploader::create: no store");
  if (object.empty() || object.back() == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("upload ", store->url(bucket, object), ": not an object name"));
  }
  if (internal::is_upload_part_name(object)) {
    return absl::InvalidArgumentError(absl::StrCat("upload ", store->url(bucket, object),
                                                   ": names containing '", internal::kPartInfix,
                                                   "' are reserved for temporary parts"));
  }
  const StoreCapabilities caps = store->capabilities();
  bool stream = options.strategy == UploadStrategy::kSingleStream;
  if (options.strategy == UploadStrategy::kAuto && !caps.multipart_upload &&
      (!caps.remote || !caps.compose)) {
    stream = true;
  }
  if (options.strategy == UploadStrategy::kParts && !caps.multipart_upload && !caps.compose) {
    return absl::UnimplementedError(
        absl::StrCat("upload ", store->url(bucket, object), ": the ", std::string(store->backend()),
                     " store has neither multipart upload nor compose"));
  }
  if (stream) {
    WriteObjectRequest request;
    request.bucket = bucket;
    request.object = object;
    request.content_type = options.content_type;
    request.if_generation_match = options.if_generation_match;
    std::string url = store->url(bucket, object);
    auto session = store->start_resumable_write(request);
    if (!session.ok()) {
      return absl::Status(session.status().code(),
                          absl::StrCat("upload ", url, ": ", session.status().message()));
    }
    return std::unique_ptr<Uploader>(
        new StreamUploader(std::move(store), *std::move(session), std::move(url)));
  }
  return std::unique_ptr<Uploader>(
      new PartUploader(std::move(store), std::move(bucket), std::move(object), std::move(options)));
}

}  // namespace dataflux
