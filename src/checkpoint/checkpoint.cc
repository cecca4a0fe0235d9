// dataflux::save / load and their writer, reader, CheckpointIO and AsyncCheckpointer.
#include "dataflux/checkpoint.h"

#include <torch/nn/module.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/io_buffer.h"
#include "core/percent.h"
#include "core/retry_policy.h"
#include "core/thread_pool.h"
#include "dataflux/url.h"
#include "engine/ranged_read.h"
#include "engine/upload_parts.h"

namespace dataflux {
namespace {

struct Target {
  std::shared_ptr<ObjectStore> store;
  StorageUrl url;
};

Target resolve(const std::string& url, const CheckpointOptions& options) {
  Target t;
  t.url = value_or_throw(StorageUrl::parse(url));
  t.store =
      options.store ? options.store : value_or_throw(open_store(t.url, options.store_options));
  return t;
}

Target resolve_object(const std::string& url, const CheckpointOptions& options) {
  Target t = resolve(url, options);
  if (t.url.object.empty() || t.url.object.back() == '/') {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", url, ": names a bucket or prefix, not an object")));
  }
  return t;
}

}  // namespace

// --- CheckpointWriter -------------------------------------------------------------------

CheckpointWriter::CheckpointWriter(const std::string& url, const CheckpointOptions& options) {
  Target t = resolve_object(url, options);
  uploader_ = value_or_throw(Uploader::create(t.store, t.url.bucket, t.url.object, options.upload));
}

CheckpointWriter::~CheckpointWriter() {
  if (committed_) return;
  internal::RetryBudgetScope budget(internal::destructor_budget());  // the rest is cleanup's
  abort();
}

std::size_t CheckpointWriter::write(const void* data, std::size_t size) noexcept {
  if (error_.ok() && !committed_) {
    try {
      error_ = uploader_->write(data, size);
    } catch (const std::exception& e) {  // e.g. bad_alloc for a part buffer
      error_ =
          absl::ResourceExhaustedError(absl::StrCat("upload ", uploader_->url(), ": ", e.what()));
    }
  }
  return size;  // anything else makes libtorch call std::terminate
}

std::function<std::size_t(const void*, std::size_t)> CheckpointWriter::writer() {
  return [this](const void* data, std::size_t size) { return write(data, size); };
}

ObjectMetadata CheckpointWriter::commit() {
  if (committed_) {
    throw Error(absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", uploader_->url(), ": already committed")));
  }
  committed_ = true;
  if (!error_.ok()) {
    (void)uploader_->abort();
    throw Error(error_);
  }
  return value_or_throw(uploader_->commit());
}

void CheckpointWriter::abort() noexcept {
  committed_ = true;
  (void)uploader_->abort();
}

UploadStats CheckpointWriter::stats() const { return uploader_->stats(); }

// --- CheckpointReader -------------------------------------------------------------------

CheckpointReader::CheckpointReader(const std::string& url, const CheckpointOptions& options) {
  Target t = resolve_object(url, options);
  internal::RangedReadOptions read;
  read.range_size = options.range_size;
  read.max_requests_in_flight = options.max_requests_in_flight;
  auto result = internal::read_object_ranged(
      *t.store, t.url.bucket, t.url.object, read, [this](std::uint64_t size) -> char* {
        if (size == 0) return nullptr;
        internal::IoBuffer buffer = internal::allocate_io_buffer(size);
        mapped_ = buffer.get_deleter().mapped;
        data_ = buffer.release();
        return data_;
      });
  if (!result.ok()) {
    internal::IoBufferDeleter{mapped_}(data_);
    data_ = nullptr;
    throw Error(result.status());
  }
  size_ = result->bytes;
  metadata_ = result->metadata;
}

CheckpointReader::~CheckpointReader() { internal::IoBufferDeleter{mapped_}(data_); }

std::size_t CheckpointReader::read(std::uint64_t pos, void* buffer, std::size_t n) const {
  if (pos >= size_) return 0;
  n = static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - pos));
  std::memcpy(buffer, data_ + pos, n);
  return n;
}

std::function<std::size_t(std::uint64_t, void*, std::size_t)> CheckpointReader::read_func() const {
  return [this](std::uint64_t pos, void* buffer, std::size_t n) { return read(pos, buffer, n); };
}

std::function<std::size_t()> CheckpointReader::size_func() const {
  return [this] { return size_; };
}

// --- save / load ------------------------------------------------------------------------

void save(torch::serialize::OutputArchive& archive, const std::string& url,
          const CheckpointOptions& options) {
  CheckpointWriter writer(url, options);
  archive.save_to(writer.writer());
  writer.commit();
}

void load(torch::serialize::InputArchive& archive, const std::string& url,
          const CheckpointOptions& options) {
  CheckpointReader reader(url, options);
  internal::load_checked(url, [&] { archive.load_from(reader.read_func(), reader.size_func()); });
}

void internal::load_checked(const std::string& url, const std::function<void()>& load) {
  try {
    load();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));  // c10::Error appends a backtrace
    throw Error(absl::InvalidArgumentError(absl::StrCat(
        "load ", url, ": libtorch could not read the checkpoint into this value: ", what)));
  }
}

namespace {

std::string shape_text(const torch::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

// What differs between `module` (one level, then its children) and the archive it would load.
void compare(torch::nn::Module& module, torch::serialize::InputArchive& archive,
             const std::string& prefix, std::vector<std::string>* problems) {
  std::set<std::string> expected;
  auto check = [&](const std::string& name, const torch::Tensor& mine, bool is_buffer) {
    expected.insert(name);
    torch::Tensor theirs;
    if (!archive.try_read(name, theirs, is_buffer)) {
      problems->push_back(absl::StrCat("missing ", prefix, name));
    } else if (theirs.sizes() != mine.sizes()) {
      problems->push_back(absl::StrCat(prefix, name, ": checkpoint ", shape_text(theirs),
                                       ", module ", shape_text(mine)));
    }
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) check(p.key(), p.value(), false);
  for (const auto& b : module.named_buffers(/*recurse=*/false)) check(b.key(), b.value(), true);
  for (const auto& child : module.named_children()) {
    if (!child.value()->is_serializable()) continue;
    expected.insert(child.key());
    torch::serialize::InputArchive nested;
    if (!archive.try_read(child.key(), nested)) {
      problems->push_back(absl::StrCat("missing ", prefix, child.key()));
      continue;
    }
    compare(*child.value(), nested, absl::StrCat(prefix, child.key(), "."), problems);
  }
  for (const std::string& key : archive.keys()) {
    if (expected.count(key) == 0) problems->push_back(absl::StrCat("unexpected ", prefix, key));
  }
}

}  // namespace

void internal::load_module(torch::nn::Module& module, const CheckpointReader& reader,
                           const std::string& url, bool strict) {
  torch::serialize::InputArchive archive;
  load_checked(url, [&] { archive.load_from(reader.read_func(), reader.size_func()); });
  if (strict) {
    std::vector<std::string> problems;
    load_checked(url, [&] { compare(module, archive, "", &problems); });
    if (!problems.empty()) {
      constexpr std::size_t kShown = 20;
      const std::size_t more = problems.size() > kShown ? problems.size() - kShown : 0;
      problems.resize(std::min(problems.size(), kShown));
      throw Error(absl::InvalidArgumentError(absl::StrCat(
          "load ", url, ": the checkpoint does not match this module (",
          absl::StrJoin(problems, "; "), more > 0 ? absl::StrCat("; and ", more, " more") : "",
          "); nothing was loaded. CheckpointOptions::strict = false applies libtorch's own "
          "rules instead")));
    }
  }
  load_checked(url, [&] { module.load(archive); });
}

// --- CheckpointIO -----------------------------------------------------------------------

bool CheckpointIO::remove(const std::string& url) const {
  Target t = resolve_object(url, options_);
  // S3 answers a delete of a missing key with success, so ask first: every backend then says
  // the same thing.
  auto meta = t.store->get_object_metadata(t.url.bucket, t.url.object);
  if (meta.status().code() == absl::StatusCode::kNotFound) return false;
  throw_if_error(meta.status());
  DeleteObjectRequest request;
  request.bucket = t.url.bucket;
  request.object = t.url.object;
  absl::Status s = t.store->delete_object(request);
  if (s.code() == absl::StatusCode::kNotFound) return false;
  throw_if_error(s);
  return true;
}

bool CheckpointIO::exists(const std::string& url) const {
  Target t = resolve_object(url, options_);
  auto meta = t.store->get_object_metadata(t.url.bucket, t.url.object);
  if (meta.status().code() == absl::StatusCode::kNotFound) return false;
  throw_if_error(meta.status());
  return true;
}

std::vector<std::string> CheckpointIO::list(const std::string& prefix_url) const {
  Target t = resolve(prefix_url, options_);
  std::vector<std::string> out;
  ListObjectsRequest request;
  request.bucket = t.url.bucket;
  request.prefix = t.url.object;
  do {
    auto page = value_or_throw(t.store->list_objects(request));
    for (const auto& o : page.objects) {
      if (internal::is_upload_part_name(o.name)) continue;
      StorageUrl u = t.url;
      u.object = o.name;
      out.push_back(u.to_string());
    }
    request.page_token = page.next_page_token;
  } while (!request.page_token.empty());
  return out;
}

// --- AsyncCheckpointer ------------------------------------------------------------------

AsyncCheckpointer::AsyncCheckpointer(CheckpointOptions options, int max_saves_in_flight)
    : options_(std::move(options)), max_in_flight_(std::max(1, max_saves_in_flight)) {}

AsyncCheckpointer::~AsyncCheckpointer() { wait(); }

void AsyncCheckpointer::append_snapshot(std::vector<std::string>& chunks, const void* data,
                                        std::size_t size) {
  constexpr std::size_t kChunk = 4 << 20;
  const char* p = static_cast<const char*>(data);
  if (size >= kChunk / 4) {  // a tensor: one exact copy
    chunks.emplace_back(p, size);
    return;
  }
  if (chunks.empty() || chunks.back().size() + size > chunks.back().capacity()) {
    chunks.emplace_back();
    chunks.back().reserve(kChunk);
  }
  chunks.back().append(p, size);
}

void AsyncCheckpointer::wait_for_slot() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return in_flight_ < max_in_flight_; });
  ++in_flight_;
}

void AsyncCheckpointer::release_slot() {
  std::lock_guard<std::mutex> lock(mu_);
  --in_flight_;
  changed_.notify_all();
}

std::future<ObjectMetadata> AsyncCheckpointer::upload(
    std::shared_ptr<std::vector<std::string>> snapshot, const std::string& url) {
  auto promise = std::make_shared<std::promise<ObjectMetadata>>();
  std::future<ObjectMetadata> future = promise->get_future();
  // On the blocking pool: no thread of its own. The destructor's wait() holds `this` alive.
  auto save = [this, snapshot, url, promise] {
    try {
      CheckpointWriter writer(url, options_);
      for (auto& chunk : *snapshot) {
        writer.write(chunk.data(), chunk.size());
        std::string().swap(chunk);  // free the snapshot as it goes up
      }
      promise->set_value(writer.commit());
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
    release_slot();
  };
  try {
    internal::ThreadPool::blocking().run(std::move(save));
  } catch (const std::system_error& e) {  // not started: its slot must not stay taken
    promise->set_exception(std::make_exception_ptr(Error(absl::ResourceExhaustedError(
        absl::StrCat("save ", internal::printable(url), ": no thread to run it: ", e.what())))));
    release_slot();
  }
  return future;
}

void AsyncCheckpointer::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return in_flight_ == 0; });
}

int AsyncCheckpointer::saves_in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

}  // namespace dataflux
