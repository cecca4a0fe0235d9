// Fetcher: the admission queue (request and byte budgets) and direct reads. Compose batches
// are in compose.cc, the prefetch window in fetcher_stream.cc.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/read_checks.h"
#include "core/thread_pool.h"
#include "dataflux/crc32c.h"
#include "engine/fetcher_internal.h"

namespace dataflux {
namespace internal {

FetchGroup::FetchGroup(std::vector<FetchTarget> targets,
                       std::function<void(std::size_t, const absl::Status&)> on_item,
                       std::function<void(absl::Status)> on_done)
    : targets_(std::move(targets)),
      on_item_(std::move(on_item)),
      on_done_(std::move(on_done)),
      remaining_(targets_.size()) {}

void FetchGroup::item_done(std::size_t i, const absl::Status& status) {
  // on_item first, and the count after it, so that on_done runs only once every on_item has
  // returned, as fetch_async promises (items complete on several threads at once).
  if (on_item_) on_item_(i, status);
  bool last;
  absl::Status first;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status.ok() && first_error_.ok()) first_error_ = status;
    last = --remaining_ == 0;
    if (last) first = first_error_;
  }
  if (last && on_done_) on_done_(std::move(first));
}

FetcherImpl::FetcherImpl(std::shared_ptr<ObjectStore> store, std::string bucket,
                         FetchOptions options)
    : store_(std::move(store)),
      bucket_(std::move(bucket)),
      options_(options),
      capabilities_(store_->capabilities()) {}

void FetcherImpl::fetch_async(std::shared_ptr<FetchGroup> group) {
  const auto& targets = group->targets();  // never empty: Fetcher::fetch_async checks
  std::vector<bool> composed(targets.size(), false);
  for (auto& batch : plan_compose_batches(targets)) {
    for (std::size_t i : batch) composed[i] = true;
    compose_batch(group, std::move(batch));
  }
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (!composed[i]) read_direct(group, i);
  }
}

void FetcherImpl::enqueue(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++outstanding_;
    queue_.push_back(std::move(job));
  }
  pump();
}

void FetcherImpl::release(std::uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --requests_;
    bytes_ -= bytes;
    if (--outstanding_ == 0) idle_.notify_all();
  }
  pump();
}

void FetcherImpl::pump() {
  std::vector<Job> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::size_t max_requests = std::max<std::size_t>(1, options_.max_requests_in_flight);
    while (!queue_.empty() && requests_ < max_requests &&
           (requests_ == 0 || bytes_ + queue_.front().bytes <= options_.max_bytes_in_flight)) {
      ++requests_;
      bytes_ += queue_.front().bytes;
      ready.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  for (auto& job : ready) job.start();
}

void FetcherImpl::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return outstanding_ == 0; });
}

FetchStats FetcherImpl::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

absl::Status thrown_by_store() {
  try {
    throw;
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("the store threw instead of returning a status: ", e.what()));
  } catch (...) {
    return absl::InternalError("the store threw instead of returning a status");
  }
}

void FetcherImpl::read_direct(const std::shared_ptr<FetchGroup>& group, std::size_t i) {
  const FetchTarget& target = group->targets()[i];
  if (target.object.size == 0) {
    // Nothing to read: the listing already says it is empty.
    group->item_done(i, absl::OkStatus());
    return;
  }
  if (options_.range_size > 0 && target.object.size > options_.range_size) {
    read_ranges(group, i);
    return;
  }
  Job job;
  job.bytes = target.object.size;
  job.start = [self = shared_from_this(), group, i] {
    const FetchTarget& t = group->targets()[i];
    ReadObjectRequest request;
    request.bucket = self->bucket_;
    request.object = t.object.name;
    if (t.object.generation != 0) request.generation = t.object.generation;
    request.etag = t.etag;
    request.expected_crc32c = t.object.crc32c;
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      ++self->stats_.direct_reads;
    }
    const std::uint64_t size = t.object.size;
    try {
      self->store_->read_object_async(
          request, t.buffer, static_cast<std::size_t>(size),
          [self, group, i, size](absl::StatusOr<ReadObjectResult> result) {
            const FetchTarget& t = group->targets()[i];
            absl::Status status = self->explain_gone(t, result.status());
            if (result.ok() && result->bytes != size) {
              status = absl::DataLossError(
                  absl::StrCat("fetch ", self->store_->url(self->bucket_, t.object.name), ": read ",
                               result->bytes, " bytes but the listing says ", size,
                               " (changed since it was listed?)"));
            }
            group->item_done(i, status);
            self->release(size);
          });
    } catch (...) {
      group->item_done(
          i, absl::Status(absl::StatusCode::kInternal,
                          absl::StrCat("fetch ", self->store_->url(self->bucket_, t.object.name),
                                       ": ", thrown_by_store().message())));
      self->release(size);
    }
  };
  enqueue(std::move(job));
}

absl::Status FetcherImpl::explain_gone(const FetchTarget& t, absl::Status status) const {
  if (status.code() != absl::StatusCode::kNotFound || t.object.generation == 0) return status;
  return absl::NotFoundError(absl::StrCat(
      store_->url(bucket_, t.object.name), ": generation ", t.object.generation,
      " listed at construction no longer exists: the object was overwritten or deleted (",
      status.message(), ")"));
}

void FetcherImpl::range_done(const std::shared_ptr<FetchGroup>& group, std::size_t i,
                             const std::shared_ptr<Ranges>& ranges, std::size_t k,
                             std::uint64_t offset, std::uint64_t length, absl::Status status) {
  const FetchTarget& t = group->targets()[i];
  const std::uint32_t crc =
      status.ok() && t.object.crc32c ? crc32c_extend(0, t.buffer + offset, length) : 0;
  bool last;
  {
    std::lock_guard<std::mutex> lock(ranges->mu);
    ranges->crcs[k] = crc;
    if (!status.ok() && ranges->first_error.ok()) ranges->first_error = status;
    last = --ranges->remaining == 0;
    if (last) status = ranges->first_error;
  }
  if (last) {
    if (status.ok() && t.object.crc32c) {
      const std::uint32_t whole =
          crc32c_of_ranges(ranges->crcs, options_.range_size, t.object.size);
      status =
          check_whole_object_crc32c(absl::StrCat("fetch ", store_->url(bucket_, t.object.name)),
                                    t.object.size, whole, std::nullopt, t.object.crc32c);
    }
    group->item_done(i, status);
  }
  release(length);
}

void FetcherImpl::read_ranges(const std::shared_ptr<FetchGroup>& group, std::size_t i) {
  const FetchTarget& target = group->targets()[i];
  const std::uint64_t size = target.object.size;
  const std::uint64_t range = options_.range_size;
  const std::size_t count = static_cast<std::size_t>((size + range - 1) / range);
  auto ranges = std::make_shared<Ranges>();
  ranges->crcs.assign(count, 0);
  ranges->remaining = count;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.direct_reads;
  }
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint64_t offset = k * range;
    const std::uint64_t length = std::min(range, size - offset);
    Job job;
    job.bytes = length;
    job.start = [self = shared_from_this(), group, i, ranges, k, offset, length] {
      const FetchTarget& t = group->targets()[i];
      ReadObjectRequest request;
      request.bucket = self->bucket_;
      request.object = t.object.name;
      if (t.object.generation != 0) request.generation = t.object.generation;
      request.etag = t.etag;
      request.offset = offset;
      request.length = length;
      {
        std::lock_guard<std::mutex> lock(self->mu_);
        ++self->stats_.ranged_reads;
      }
      try {
        self->store_->read_object_async(
            request, t.buffer + offset, static_cast<std::size_t>(length),
            [self, group, i, ranges, k, offset, length](absl::StatusOr<ReadObjectResult> result) {
              const FetchTarget& t = group->targets()[i];
              auto what = [&] {
                return absl::StrCat("fetch ", self->store_->url(self->bucket_, t.object.name),
                                    ": range ", offset, "-", offset + length - 1);
              };
              absl::Status status = self->explain_gone(t, result.status());
              if (!status.ok()) {
                status = absl::Status(status.code(), absl::StrCat(what(), ": ", status.message()));
              } else if (result->bytes != length) {
                status = absl::DataLossError(absl::StrCat(what(), ": read ", result->bytes,
                                                          " bytes (changed since it was listed?)"));
              }
              // Checksummed on the shared pool (CPU work off the transport's loop thread, which
              // would otherwise checksum every range in turn), combined once the last is in.
              if (status.ok() && t.object.crc32c) {
                ThreadPool::shared().run([self, group, i, ranges, k, offset, length] {
                  self->range_done(group, i, ranges, k, offset, length, absl::OkStatus());
                });
              } else {
                self->range_done(group, i, ranges, k, offset, length, status);
              }
            });
      } catch (...) {
        self->range_done(
            group, i, ranges, k, offset, length,
            absl::Status(absl::StatusCode::kInternal,
                         absl::StrCat("fetch ", self->store_->url(self->bucket_, t.object.name),
                                      ": ", thrown_by_store().message())));
      }
    };
    enqueue(std::move(job));
  }
}

}  // namespace internal

Fetcher::Fetcher(std::shared_ptr<ObjectStore> store, std::string bucket, FetchOptions options)
    : impl_(std::make_shared<internal::FetcherImpl>(std::move(store), std::move(bucket), options)) {
}

Fetcher::~Fetcher() { impl_->wait_idle(); }

void Fetcher::fetch_async(std::vector<FetchTarget> targets,
                          std::function<void(std::size_t, const absl::Status&)> on_item,
                          std::function<void(absl::Status)> on_done) {
  if (targets.empty()) {
    if (on_done) on_done(absl::OkStatus());
    return;
  }
  for (const auto& t : targets) {
    if (t.buffer == nullptr && t.object.size != 0) {
      // Refused as a whole: every item still hears why, then on_done, as for any fetch.
      const absl::Status refused = absl::InvalidArgumentError(
          absl::StrCat("fetch ", impl_->store()->url(impl_->bucket(), t.object.name),
                       ": no buffer for ", t.object.size, " bytes"));
      for (std::size_t i = 0; i < targets.size() && on_item; ++i) on_item(i, refused);
      if (on_done) on_done(refused);
      return;
    }
  }
  impl_->fetch_async(std::make_shared<internal::FetchGroup>(std::move(targets), std::move(on_item),
                                                            std::move(on_done)));
}

absl::Status Fetcher::fetch(std::vector<FetchTarget> targets) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  absl::Status result;
  fetch_async(std::move(targets), nullptr, [&](absl::Status status) {
    std::lock_guard<std::mutex> lock(mu);
    result = std::move(status);
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  return result;
}

FetchStats Fetcher::stats() const { return impl_->stats(); }
const std::string& Fetcher::bucket() const { return impl_->bucket(); }
const std::shared_ptr<ObjectStore>& Fetcher::store() const { return impl_->store(); }

}  // namespace dataflux
