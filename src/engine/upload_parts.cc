#include "engine/upload_parts.h"

#include <algorithm>
#include <atomic>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/read_checks.h"
#include "core/retry_policy.h"
#include "core/thread_pool.h"
#include "dataflux/crc32c.h"

namespace dataflux::internal {
namespace {

absl::Status with_context(const absl::Status& s, const std::string& context) {
  return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
}

}  // namespace

bool is_upload_part_name(const std::string& name) {
  return name.find(kPartInfix) != std::string::npos;
}

std::string new_upload_id() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("%016x", rng());
}

absl::Status delete_temporary(ObjectStore& store, const std::string& bucket,
                              const std::string& object, std::optional<std::int64_t> generation) {
  const bool generations = store.capabilities().generations;
  for (int pass = 0; pass < 2; ++pass) {
    DeleteObjectRequest request;
    request.bucket = bucket;
    request.object = object;
    if (generations && !generation) {
      auto live = store.get_object_metadata(bucket, object);
      if (live.status().code() == absl::StatusCode::kNotFound) return absl::OkStatus();
      if (!live.ok()) {
        return with_context(live.status(),
                            absl::StrCat("delete temporary part ", store.url(bucket, object)));
      }
      generation = live->generation;
    }
    if (generations) request.if_generation_match = generation;
    absl::Status s = store.delete_object(request);
    if (s.ok() || s.code() == absl::StatusCode::kNotFound) return absl::OkStatus();
    // Another generation lives there (the part was replaced): look it up once more.
    if (s.code() == absl::StatusCode::kFailedPrecondition && pass == 0) {
      generation.reset();
      continue;
    }
    return with_context(s, absl::StrCat("delete temporary part ", store.url(bucket, object)));
  }
  return absl::OkStatus();
}

absl::StatusOr<ObjectMetadata> publish(
    ObjectStore& store, const std::string& bucket, const std::string& object,
    std::optional<std::int64_t> if_generation_match, std::uint64_t size, std::uint32_t crc,
    const std::function<absl::StatusOr<ObjectMetadata>(std::optional<std::int64_t>)>& write) {
  if (if_generation_match) {
    auto result = write(if_generation_match);
    if (result.ok() || result.status().code() != absl::StatusCode::kFailedPrecondition) {
      return result;
    }
    // The caller's precondition met our own first copy, whose reply was lost: the live object
    // is ours when it has exactly our size and CRC32C.
    if (auto ours = ours_despite_conflict(store, bucket, object, size, crc, result.status())) {
      return *ours;
    }
    return result;
  }
  const bool generations = store.capabilities().generations;
  absl::StatusOr<ObjectMetadata> result = absl::UnknownError("not attempted");
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::optional<std::int64_t> pin;
    if (generations) {
      auto live = store.get_object_metadata(bucket, object);
      if (live.ok()) {
        pin = live->generation;
      } else if (live.status().code() == absl::StatusCode::kNotFound) {
        pin = 0;
      } else {
        return live.status();
      }
    }
    result = write(pin);
    if (result.ok() || result.status().code() != absl::StatusCode::kFailedPrecondition || !pin) {
      return result;
    }
    // A retried request whose first try landed sees its own result: accept it when the live
    // object is ours; otherwise someone else wrote in between, so pin again.
    if (auto ours = ours_despite_conflict(store, bucket, object, size, crc, result.status(), pin)) {
      return *ours;
    }
  }
  return result;
}

ComposeMultipartUpload::ComposeMultipartUpload(std::shared_ptr<ObjectStore> store,
                                               WriteObjectRequest request, UploadOptions options)
    : store_(std::move(store)),
      request_(std::move(request)),
      options_(std::move(options)),
      id_(new_upload_id()),
      url_(store_->url(request_.bucket, request_.object)) {}

ComposeMultipartUpload::~ComposeMultipartUpload() {
  bool done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done = done_;
  }
  if (!done) {
    RetryBudgetScope budget(destructor_budget());  // what is left is cleanup's
    (void)abort();
  }
}

std::string ComposeMultipartUpload::part_name(int number) const {
  return absl::StrFormat("%s%s%s-%05d", request_.object, kPartInfix, id_, number);
}

absl::Status ComposeMultipartUpload::upload_part(int number, std::string_view data) {
  const int max_parts =
      store_->capabilities().max_parts > 0 ? store_->capabilities().max_parts : 10000;
  const std::string context = absl::StrCat("upload ", url_, ": part ", number);
  if (number < 1 || number > max_parts) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ": part numbers go from 1 to ", max_parts));
  }
  Part part;
  part.name = part_name(number);
  part.size = data.size();
  part.crc = crc32c(data);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return absl::FailedPreconditionError(absl::StrCat(context, ": upload is over"));
    temporaries_.push_back(part.name);
  }
  WriteObjectRequest write;
  write.bucket = request_.bucket;
  write.object = part.name;
  write.content_type = request_.content_type;
  write.crc32c = part.crc;  // the store compares the server's checksum with it
  write.if_generation_match = 0;
  absl::StatusOr<ObjectMetadata> stored = store_->write_object(write, data);
  if (!stored.ok() && stored.status().code() == absl::StatusCode::kFailedPrecondition) {
    // The name is unique to this upload: either an earlier try of this request landed (its
    // reply was lost), or the part is being replaced.
    auto live = store_->get_object_metadata(request_.bucket, part.name);
    if (live.ok() && has_exactly(*live, part.size, part.crc)) {
      stored = *live;
    } else if (live.ok()) {
      write.if_generation_match = live->generation;
      stored = store_->write_object(write, data);
    }
  }
  if (!stored.ok()) return stored.status();  // names the part object; the caller adds the number
  if (stored->size != part.size || (stored->crc32c && *stored->crc32c != part.crc)) {
    return absl::DataLossError(absl::StrCat(
        store_->url(request_.bucket, part.name), ": the server stored ", stored->size,
        " bytes with CRC32C ", stored->crc32c ? crc32c_text(*stored->crc32c) : "none", " but ",
        part.size, " bytes with CRC32C ", crc32c_text(part.crc), " were sent"));
  }
  part.generation = stored->generation;
  part.uploaded = true;
  std::lock_guard<std::mutex> lock(mu_);
  generations_[part.name] = part.generation;
  if (parts_.size() < static_cast<std::size_t>(number)) parts_.resize(number);
  parts_[number - 1] = std::move(part);
  return absl::OkStatus();
}

absl::StatusOr<ObjectMetadata> ComposeMultipartUpload::complete() {
  std::vector<Part> level;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return absl::FailedPreconditionError(absl::StrCat("upload ", url_, " is over"));
    level = parts_;
  }
  auto fail = [&](absl::Status s) -> absl::Status {
    (void)abort();
    return s;
  };
  if (level.empty()) {
    return fail(absl::FailedPreconditionError(absl::StrCat("upload ", url_, ": no parts")));
  }
  for (std::size_t i = 0; i < level.size(); ++i) {
    if (!level[i].uploaded) {
      return fail(absl::FailedPreconditionError(
          absl::StrCat("upload ", url_, ": part ", i + 1, " is missing")));
    }
  }
  std::uint64_t total = 0;
  std::uint32_t total_crc = 0;
  for (const auto& p : level) {
    total_crc = crc32c_combine(total_crc, p.crc, p.size);
    total += p.size;
  }
  const auto caps = store_->capabilities();
  const std::size_t fan_in = caps.max_compose_sources > 1 ? caps.max_compose_sources : 32;
  // Reduce level by level until one compose can produce the final object.
  for (int depth = 1; level.size() > fan_in; ++depth) {
    const int groups = static_cast<int>((level.size() + fan_in - 1) / fan_in);
    std::vector<Part> next(static_cast<std::size_t>(groups));
    for (int g = 0; g < groups; ++g) {
      next[g].name = absl::StrFormat("%s%s%s-c%d-%05d", request_.object, kPartInfix, id_, depth, g);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& p : next) temporaries_.push_back(p.name);
    }
    absl::Status s = parallel_for(
        ThreadPool::blocking(), groups, options_.max_parts_in_flight, [&](int g) -> absl::Status {
          ComposeObjectRequest compose;
          compose.bucket = request_.bucket;
          compose.destination = next[g].name;
          compose.content_type = request_.content_type;
          compose.if_generation_match = 0;
          const std::size_t begin = g * fan_in, end = std::min(level.size(), begin + fan_in);
          for (std::size_t i = begin; i < end; ++i) {
            compose.sources.push_back({level[i].name, level[i].generation});
            next[g].crc = crc32c_combine(next[g].crc, level[i].crc, level[i].size);
            next[g].size += level[i].size;
          }
          auto made = store_->compose_object(compose);
          if (!made.ok() && made.status().code() == absl::StatusCode::kFailedPrecondition) {
            // A re-send meeting its own first copy (the reply was lost): ours when it has exactly
            // this size and CRC32C, since the name is this upload's own.
            if (auto ours = ours_despite_conflict(*store_, request_.bucket, next[g].name,
                                                  next[g].size, next[g].crc, made.status())) {
              made = *ours;
            }
          }
          if (!made.ok()) {
            return with_context(made.status(),
                                absl::StrCat("upload ", url_, ": compose of parts ", begin + 1, "-",
                                             end, " at depth ", depth));
          }
          next[g].generation = made->generation;
          std::lock_guard<std::mutex> lock(mu_);
          generations_[next[g].name] = made->generation;
          return absl::OkStatus();
        });
    if (!s.ok()) return fail(s);
    level = std::move(next);
  }
  auto published = publish(*store_, request_.bucket, request_.object, request_.if_generation_match,
                           total, total_crc, [&](std::optional<std::int64_t> precondition) {
                             ComposeObjectRequest compose;
                             compose.bucket = request_.bucket;
                             compose.destination = request_.object;
                             compose.content_type = request_.content_type;
                             compose.if_generation_match = precondition;
                             for (const auto& p : level)
                               compose.sources.push_back({p.name, p.generation});
                             return store_->compose_object(compose);
                           });
  if (!published.ok()) {
    return fail(with_context(published.status(), absl::StrCat("upload ", url_, ": final compose")));
  }
  if (published->size != total || (published->crc32c && *published->crc32c != total_crc)) {
    // Never leave a wrong object under the final name.
    DeleteObjectRequest del;
    del.bucket = request_.bucket;
    del.object = request_.object;
    del.if_generation_match = published->generation;
    (void)store_->delete_object(del);
    return fail(absl::DataLossError(absl::StrCat(
        "upload ", url_, ": the composed object has ", published->size, " bytes, CRC32C ",
        published->crc32c ? crc32c_text(*published->crc32c) : "none", "; expected ", total,
        " bytes, CRC32C ", crc32c_text(total_crc))));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  (void)cleanup();  // the object is published; leftovers are counted in leaked_parts()
  return published;
}

absl::Status ComposeMultipartUpload::abort() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  return cleanup();
}

std::optional<std::int64_t> ComposeMultipartUpload::generation_of(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = generations_.find(name);
  if (it == generations_.end()) return std::nullopt;
  return it->second;
}

absl::Status ComposeMultipartUpload::cleanup() {
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> lock(mu_);
    names.swap(temporaries_);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::vector<std::string> failed_names;
  std::mutex failed_mu;
  absl::Status s = parallel_for(ThreadPool::blocking(), static_cast<int>(names.size()),
                                options_.max_parts_in_flight, [&](int i) {
                                  absl::Status d = delete_temporary(
                                      *store_, request_.bucket, names[i], generation_of(names[i]));
                                  if (!d.ok()) {
                                    std::lock_guard<std::mutex> lock(failed_mu);
                                    failed_names.push_back(names[i]);
                                  }
                                  return d;
                                });
  std::lock_guard<std::mutex> lock(mu_);
  // Keep what could not be deleted, so a later abort() tries again.
  temporaries_.insert(temporaries_.end(), failed_names.begin(), failed_names.end());
  leaked_ = static_cast<int>(temporaries_.size());
  return s;
}

int ComposeMultipartUpload::leaked_parts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leaked_;
}

}  // namespace dataflux::internal
