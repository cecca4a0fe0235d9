// Fetcher: the admission queue (request and byte budgets) and direct reads. Compose batches
// are in compose.cc, the prefetch window in fetcher_stream.cc.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
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
  bool last;
  absl::Status first;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status.ok() && first_error_.ok()) first_error_ = status;
    last = --remaining_ == 0;
    if (last) first = first_error_;
  }
  if (on_item_) on_item_(i, status);
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

void FetcherImpl::read_direct(const std::shared_ptr<FetchGroup>& group, std::size_t i) {
  const FetchTarget& target = group->targets()[i];
  if (target.object.size == 0) {
    // Nothing to read: the listing already says it is empty.
    group->item_done(i, absl::OkStatus());
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
    request.expected_crc32c = t.object.crc32c;
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      ++self->stats_.direct_reads;
    }
    const std::uint64_t size = t.object.size;
    self->store_->read_object_async(
        request, t.buffer, static_cast<std::size_t>(size),
        [self, group, i, size](absl::StatusOr<ReadObjectResult> result) {
          absl::Status status = result.status();
          if (result.ok() && result->bytes != size) {
            const FetchTarget& t = group->targets()[i];
            status = absl::DataLossError(absl::StrCat(
                "fetch ", self->bucket_, "/", t.object.name, ": read ", result->bytes,
                " bytes but the listing says ", size, " (changed since it was listed?)"));
          }
          group->item_done(i, status);
          self->release(size);
        });
  };
  enqueue(std::move(job));
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
      if (on_done) {
        on_done(
            absl::InvalidArgumentError(absl::StrCat("fetch ", impl_->bucket(), "/", t.object.name,
                                                    ": no buffer for ", t.object.size, " bytes")));
      }
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
