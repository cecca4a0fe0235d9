#include "emulator/store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dataflux/crc32c.h"
#include "emulator/wire.h"

namespace dataflux::emulator::internal {
namespace {

constexpr int kMaxComposeSources = 32;

class MemoryBlob : public Blob {
 public:
  explicit MemoryBlob(std::string data) : data_(std::move(data)) {}
  std::uint64_t size() const override { return data_.size(); }
  const std::string* memory() const override { return &data_; }
  bool read(std::uint64_t offset, std::size_t n, char* out) const override {
    if (offset > data_.size() || n > data_.size() - offset) return false;
    std::memcpy(out, data_.data() + offset, n);
    return true;
  }

 private:
  const std::string data_;
};

// One file per object generation; the file goes when the last reference does.
class FileBlob : public Blob {
 public:
  FileBlob(std::string path, std::uint64_t size) : path_(std::move(path)), size_(size) {}
  ~FileBlob() override { ::unlink(path_.c_str()); }
  std::uint64_t size() const override { return size_; }
  bool read(std::uint64_t offset, std::size_t n, char* out) const override {
    if (offset > size_ || n > size_ - offset) return false;
    // Opened per read: thousands of objects must not hold thousands of descriptors.
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    std::size_t done = 0;
    while (done < n) {
      ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      done += static_cast<std::size_t>(got);
    }
    ::close(fd);
    return done == n;
  }

 private:
  const std::string path_;
  const std::uint64_t size_;
};

// A composed object in the memory store: its sources' bytes, shared rather than copied (GCS
// composes without moving data too, so compose costs the same whatever the size).
class CompositeBlob : public Blob {
 public:
  explicit CompositeBlob(std::vector<std::shared_ptr<const Blob>> parts)
      : parts_(std::move(parts)) {
    for (const auto& p : parts_) {
      starts_.push_back(size_);
      size_ += p->size();
    }
  }
  std::uint64_t size() const override { return size_; }
  bool read(std::uint64_t offset, std::size_t n, char* out) const override {
    if (offset > size_ || n > size_ - offset) return false;
    // The first part holding `offset`, then forward until n bytes are copied.
    std::size_t i = static_cast<std::size_t>(
        std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin() - 1);
    for (; n > 0; ++i) {
      const std::uint64_t within = offset - starts_[i];
      const std::size_t take =
          static_cast<std::size_t>(std::min<std::uint64_t>(n, parts_[i]->size() - within));
      if (take > 0 && !parts_[i]->read(within, take, out)) return false;
      out += take;
      offset += take;
      n -= take;
    }
    return true;
  }

 private:
  std::vector<std::shared_ptr<const Blob>> parts_;
  std::vector<std::uint64_t> starts_;  // offset of each part's first byte
  std::uint64_t size_ = 0;
};

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::Status not_found(const std::string& bucket, const std::string& name) {
  return absl::NotFoundError(absl::StrCat("No such object: ", bucket, "/", name));
}

absl::Status verify_hashes(const std::string& data, std::uint32_t crc, const NewObject& meta) {
  if (meta.expected_crc32c && *meta.expected_crc32c != crc) {
    return absl::InvalidArgumentError(
        absl::StrCat("Provided CRC32C \"", crc32c_to_base64(*meta.expected_crc32c),
                     "\" doesn't match calculated CRC32C \"", crc32c_to_base64(crc), "\"."));
  }
  if (!meta.expected_md5_base64.empty()) {
    std::string md5 = md5_base64(data);
    if (md5 != meta.expected_md5_base64) {
      return absl::InvalidArgumentError(
          absl::StrCat("Provided MD5 hash \"", meta.expected_md5_base64,
                       "\" doesn't match calculated MD5 hash \"", md5, "\"."));
    }
  }
  return absl::OkStatus();
}

}  // namespace

int http_status_for(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kFailedPrecondition:
      return 412;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kOutOfRange:
      return 416;
    case absl::StatusCode::kResourceExhausted:
      return 413;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kUnimplemented:
      return 501;
    default:
      return 500;
  }
}

absl::Status check_preconditions(const ObjectRecord* live, const Preconditions& pre) {
  const std::int64_t generation = live ? live->generation : 0;
  if (pre.if_generation_match && *pre.if_generation_match != generation) {
    return absl::FailedPreconditionError(
        absl::StrCat("At least one of the pre-conditions you specified did not hold: "
                     "ifGenerationMatch=",
                     *pre.if_generation_match, ", live generation ", generation));
  }
  if (pre.if_generation_not_match && *pre.if_generation_not_match == generation) {
    return absl::FailedPreconditionError(
        "At least one of the pre-conditions you specified did not hold: ifGenerationNotMatch");
  }
  if (pre.if_metageneration_match &&
      (live == nullptr || *pre.if_metageneration_match != live->metageneration)) {
    return absl::FailedPreconditionError(
        "At least one of the pre-conditions you specified did not hold: ifMetagenerationMatch");
  }
  if (pre.if_metageneration_not_match && live != nullptr &&
      *pre.if_metageneration_not_match == live->metageneration) {
    return absl::FailedPreconditionError(
        "At least one of the pre-conditions you specified did not hold: "
        "ifMetagenerationNotMatch");
  }
  return absl::OkStatus();
}

Store::Store(std::string storage_dir, std::string default_project)
    : storage_dir_(std::move(storage_dir)), default_project_(std::move(default_project)) {}

std::int64_t Store::next_generation() {
  last_generation_ = std::max(last_generation_ + 1, now_us());
  return last_generation_;
}

absl::StatusOr<Store::Bucket*> Store::find_bucket(const std::string& name) {
  auto it = buckets_.find(name);
  if (it == buckets_.end()) {
    return absl::NotFoundError(absl::StrCat("The specified bucket does not exist: ", name));
  }
  return &it->second;
}

absl::StatusOr<const Store::Bucket*> Store::find_bucket(const std::string& name) const {
  auto it = buckets_.find(name);
  if (it == buckets_.end()) {
    return absl::NotFoundError(absl::StrCat("The specified bucket does not exist: ", name));
  }
  return &it->second;
}

absl::Status Store::create_bucket(const std::string& name, const std::string& project) {
  if (name.size() < 3 || name.size() > 222 ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("Invalid bucket name: '", name, "'"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (buckets_.count(name) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("Your previous request to create the named bucket succeeded and you "
                     "already own it: ",
                     name));
  }
  Bucket& bucket = buckets_[name];
  bucket.record.name = name;
  bucket.record.project = project.empty() ? default_project_ : project;
  bucket.record.created_us = now_us();
  return absl::OkStatus();
}

absl::StatusOr<BucketRecord> Store::get_bucket(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto bucket = find_bucket(name);
  if (!bucket.ok()) return bucket.status();
  return (*bucket)->record;
}

std::vector<BucketRecord> Store::list_buckets(const std::string& project) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<BucketRecord> out;
  for (const auto& entry : buckets_) {
    if (project.empty() || entry.second.record.project == project) {
      out.push_back(entry.second.record);
    }
  }
  return out;
}

absl::Status Store::delete_bucket(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto bucket = find_bucket(name);
  if (!bucket.ok()) return bucket.status();
  if (!(*bucket)->objects.empty()) {
    return absl::AbortedError(absl::StrCat("The bucket you tried to delete is not empty: ", name));
  }
  buckets_.erase(name);
  return absl::OkStatus();
}

absl::StatusOr<ObjectRecord> Store::get(const std::string& bucket, const std::string& name,
                                        std::optional<std::int64_t> generation) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto b = find_bucket(bucket);
  if (!b.ok()) return b.status();
  auto it = (*b)->objects.find(name);
  // Only live generations are kept (no versioning), so an older generation is gone.
  if (it == (*b)->objects.end() || (generation && *generation != it->second.generation)) {
    return not_found(bucket, name);
  }
  return it->second;
}

absl::StatusOr<ListPage> Store::list(const std::string& bucket, const ListQuery& q) const {
  // Page tokens are "o<last item>" or "p<last prefix>", so resuming after a prefix skips all
  // the objects rolled up into it.
  std::string token;
  if (!q.page_token.empty() && (!absl::WebSafeBase64Unescape(q.page_token, &token) ||
                                token.empty() || (token[0] != 'o' && token[0] != 'p'))) {
    return absl::InvalidArgumentError("Invalid pageToken");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto b = find_bucket(bucket);
  if (!b.ok()) return b.status();
  const auto& objects = (*b)->objects;
  std::string start = std::max(q.prefix, q.start_offset);
  auto it = objects.lower_bound(start);
  std::string skip_prefix;
  if (!token.empty()) {
    std::string key = token.substr(1);
    if (token[0] == 'o') {
      if (it != objects.end() && it->first <= key) it = objects.upper_bound(key);
    } else {
      skip_prefix = key;
      if (it != objects.end() && it->first < key) it = objects.lower_bound(key);
    }
  }
  ListPage page;
  const std::size_t max_results = std::clamp<std::size_t>(q.max_results, 1, 1000);
  std::size_t emitted = 0;
  std::string last_prefix = skip_prefix;
  std::string last_key;
  char last_kind = 0;
  for (; it != objects.end(); ++it) {
    const std::string& name = it->first;
    if (!absl::StartsWith(name, q.prefix)) break;  // sorted: no later name has the prefix
    if (!q.end_offset.empty() && name >= q.end_offset) break;
    if (!last_prefix.empty() && absl::StartsWith(name, last_prefix)) continue;
    std::string rolled_up;
    if (!q.delimiter.empty()) {
      std::size_t pos = name.find(q.delimiter, q.prefix.size());
      if (pos != std::string::npos) rolled_up = name.substr(0, pos + q.delimiter.size());
    }
    if (emitted == max_results) {
      page.next_page_token = absl::WebSafeBase64Escape(std::string(1, last_kind) + last_key);
      break;
    }
    ++emitted;
    if (rolled_up.empty()) {
      page.items.push_back(it->second);
      last_kind = 'o';
      last_key = name;
      continue;
    }
    page.prefixes.push_back(rolled_up);
    last_prefix = rolled_up;
    last_kind = 'p';
    last_key = rolled_up;
    if (q.include_trailing_delimiter && name == rolled_up) page.items.push_back(it->second);
  }
  return page;
}

std::vector<ObjectRecord> Store::all_objects(const std::string& bucket) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ObjectRecord> out;
  auto b = find_bucket(bucket);
  if (!b.ok()) return out;
  for (const auto& entry : (*b)->objects) out.push_back(entry.second);
  return out;
}

absl::StatusOr<std::shared_ptr<const Blob>> Store::make_blob(std::string data) {
  if (storage_dir_.empty()) return std::make_shared<MemoryBlob>(std::move(data));
  std::string path;
  {
    std::lock_guard<std::mutex> lock(mu_);
    path = absl::StrCat(storage_dir_, "/obj-", ::getpid(), "-", ++file_counter_);
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("open ", path, ": ", std::strerror(errno)));
  }
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (done != data.size()) {
    ::unlink(path.c_str());
    return absl::InternalError(absl::StrCat("write ", path, ": ", std::strerror(errno)));
  }
  return std::make_shared<FileBlob>(path, data.size());
}

absl::StatusOr<ObjectRecord> Store::commit(Bucket* bucket, ObjectRecord record,
                                           const Preconditions& pre) {
  auto it = bucket->objects.find(record.name);
  const ObjectRecord* live = it == bucket->objects.end() ? nullptr : &it->second;
  if (auto s = check_preconditions(live, pre); !s.ok()) return s;
  record.bucket = bucket->record.name;
  record.generation = next_generation();
  record.metageneration = 1;
  record.created_us = record.updated_us = now_us();
  bucket->objects[record.name] = record;
  return record;
}

absl::StatusOr<ObjectRecord> Store::insert(const std::string& bucket, const std::string& name,
                                           std::string data, const NewObject& meta,
                                           const Preconditions& pre) {
  if (name.empty() || name.size() > 1024) {
    return absl::InvalidArgumentError("Object name must be 1-1024 bytes");
  }
  const std::uint32_t crc = crc32c(data);
  if (auto s = verify_hashes(data, crc, meta); !s.ok()) return s;
  ObjectRecord record;
  record.name = name;
  record.content_type = meta.content_type;
  record.content_encoding = meta.content_encoding;
  record.metadata = meta.metadata;
  record.crc32c = crc;
  if (compute_md5_) record.md5_base64 = md5_base64(data);
  {
    // Fail fast (before writing a file) when the bucket is missing.
    std::lock_guard<std::mutex> lock(mu_);
    if (auto b = find_bucket(bucket); !b.ok()) return b.status();
  }
  auto blob = make_blob(std::move(data));
  if (!blob.ok()) return blob.status();
  record.blob = *std::move(blob);
  std::lock_guard<std::mutex> lock(mu_);
  auto b = find_bucket(bucket);
  if (!b.ok()) return b.status();
  return commit(*b, std::move(record), pre);
}

absl::StatusOr<ObjectRecord> Store::compose(const std::string& bucket,
                                            const std::string& destination,
                                            const std::vector<ComposeSource>& sources,
                                            const NewObject& meta, const Preconditions& pre) {
  if (sources.empty() || sources.size() > kMaxComposeSources) {
    return absl::InvalidArgumentError(absl::StrCat("The number of source components provided (",
                                                   sources.size(), ") must be between 1 and ",
                                                   kMaxComposeSources));
  }
  std::vector<ObjectRecord> parts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto b = find_bucket(bucket);
    if (!b.ok()) return b.status();
    for (const auto& source : sources) {
      auto it = (*b)->objects.find(source.name);
      if (it == (*b)->objects.end()) return not_found(bucket, source.name);
      if (source.generation && *source.generation != it->second.generation) {
        return absl::FailedPreconditionError(
            absl::StrCat("Source generation mismatch for ", source.name));
      }
      if (source.if_generation_match && *source.if_generation_match != it->second.generation) {
        return absl::FailedPreconditionError(absl::StrCat(
            "At least one of the pre-conditions you specified did not hold: ", source.name));
      }
      parts.push_back(it->second);
    }
  }
  std::uint32_t crc = 0;
  std::uint64_t total = 0;
  int components = 0;
  for (const auto& part : parts) {
    crc = crc32c_combine(crc, part.crc32c, part.size());
    total += part.size();
    components += std::max(1, part.component_count);
  }
  ObjectRecord record;
  record.name = destination;
  record.content_type = meta.content_type;
  record.content_encoding = meta.content_encoding;
  record.metadata = meta.metadata;
  record.crc32c = crc;
  record.component_count = components;
  if (storage_dir_.empty()) {
    std::vector<std::shared_ptr<const Blob>> blobs;
    for (const auto& part : parts) blobs.push_back(part.blob);
    record.blob = std::make_shared<CompositeBlob>(std::move(blobs));
  } else {
    // On disk the composite gets its own file, so a test can corrupt it alone.
    std::string data(total, '\0');
    std::uint64_t offset = 0;
    for (const auto& part : parts) {
      if (part.size() > 0 && !part.blob->read(0, part.size(), data.data() + offset)) {
        return absl::InternalError(absl::StrCat("Reading ", part.name, " failed"));
      }
      offset += part.size();
    }
    auto blob = make_blob(std::move(data));
    if (!blob.ok()) return blob.status();
    record.blob = *std::move(blob);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto b = find_bucket(bucket);
  if (!b.ok()) return b.status();
  return commit(*b, std::move(record), pre);
}

absl::StatusOr<ObjectRecord> Store::copy(const std::string& src_bucket, const std::string& src_name,
                                         std::optional<std::int64_t> src_generation,
                                         const std::string& dst_bucket, const std::string& dst_name,
                                         const std::optional<NewObject>& meta,
                                         const Preconditions& pre) {
  std::lock_guard<std::mutex> lock(mu_);
  auto sb = find_bucket(src_bucket);
  if (!sb.ok()) return sb.status();
  auto it = (*sb)->objects.find(src_name);
  if (it == (*sb)->objects.end() || (src_generation && *src_generation != it->second.generation)) {
    return not_found(src_bucket, src_name);
  }
  auto db = find_bucket(dst_bucket);
  if (!db.ok()) return db.status();
  ObjectRecord record = it->second;
  record.name = dst_name;
  if (meta) {
    record.content_type = meta->content_type;
    record.content_encoding = meta->content_encoding;
    record.metadata = meta->metadata;
  }
  return commit(*db, std::move(record), pre);
}

absl::Status Store::remove(const std::string& bucket, const std::string& name,
                           std::optional<std::int64_t> generation, const Preconditions& pre) {
  std::lock_guard<std::mutex> lock(mu_);
  auto b = find_bucket(bucket);
  if (!b.ok()) return b.status();
  auto it = (*b)->objects.find(name);
  if (it == (*b)->objects.end() || (generation && *generation != it->second.generation)) {
    return not_found(bucket, name);
  }
  if (auto s = check_preconditions(&it->second, pre); !s.ok()) return s;
  (*b)->objects.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<ObjectRecord> Store::patch(
    const std::string& bucket, const std::string& name,
    const std::optional<std::string>& content_type,
    const std::map<std::string, std::optional<std::string>>& metadata, const Preconditions& pre) {
  std::lock_guard<std::mutex> lock(mu_);
  auto b = find_bucket(bucket);
  if (!b.ok()) return b.status();
  auto it = (*b)->objects.find(name);
  if (it == (*b)->objects.end()) return not_found(bucket, name);
  if (auto s = check_preconditions(&it->second, pre); !s.ok()) return s;
  ObjectRecord& record = it->second;
  if (content_type) record.content_type = *content_type;
  for (const auto& [key, value] : metadata) {
    if (value) {
      record.metadata[key] = *value;
    } else {
      record.metadata.erase(key);
    }
  }
  ++record.metageneration;
  record.updated_us = now_us();
  return record;
}

}  // namespace dataflux::emulator::internal
