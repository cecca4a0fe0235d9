// The local filesystem ObjectStore. Object "a/b" is the file <root>/a/b. Writes go to a
// temporary file in the destination directory, are fsynced, stamped with a fresh generation
// and renamed into place, so readers see either the old or the new object, never a mix.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <random>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/absl_view.h"
#include "core/http_status.h"
#include "core/percent.h"
#include "core/read_checks.h"
#include "dataflux/crc32c.h"
#include "dataflux/local.h"
#include "local/local_files.h"
#include "local/local_paths.h"

namespace dataflux {
namespace {

using internal::av;

using internal::Fd;
using internal::posix_error;

constexpr int kMaxComposeSources = 32;
constexpr std::size_t kCopyChunk = 1 << 20;
// On a temporary file: the object it was started for, so that cleanup can name it.
constexpr char kObjectAttribute[] = "user.dataflux.object";

std::string random_suffix() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrCat(absl::Hex(rng(), absl::kZeroPad16));
}

absl::Status check_generation_precondition(std::optional<std::int64_t> want,
                                           std::optional<std::int64_t> live,
                                           std::string_view what) {
  if (!want) return absl::OkStatus();
  if (*want == 0 && live) {
    return absl::FailedPreconditionError(
        absl::StrCat(av(what),
                     ": precondition ifGenerationMatch=0 failed: the object exists "
                     "(generation ",
                     *live, ")"));
  }
  if (*want != 0 && (!live || *live != *want)) {
    return absl::FailedPreconditionError(
        absl::StrCat(av(what), ": precondition ifGenerationMatch=", *want, " failed: ",
                     live ? absl::StrCat("live generation is ", *live)
                          : std::string("the object does not exist")));
  }
  return absl::OkStatus();
}

class LocalStore;

class LocalWriteSession : public WriteSession {
 public:
  // `dir`: the destination's directory, opened below the root; `temp_name`: the temporary
  // file in it, open as `fd`.
  LocalWriteSession(std::shared_ptr<LocalStore> store, WriteObjectRequest request,
                    std::string session_id, Fd dir, std::string temp_name, std::string temp_path,
                    Fd fd, std::uint64_t persisted, std::uint32_t crc)
      : store_(store),
        request_(std::move(request)),
        session_id_(std::move(session_id)),
        dir_(std::move(dir)),
        temp_name_(std::move(temp_name)),
        temp_path_(std::move(temp_path)),
        fd_(std::move(fd)),
        persisted_(persisted),
        crc_(crc) {}
  ~LocalWriteSession() override {
    if (!done_) (void)cancel();
  }

  const std::string& session_id() const override { return session_id_; }
  std::uint64_t persisted_size() const override { return persisted_; }

  absl::Status write(std::string_view data) override {
    if (done_) return absl::FailedPreconditionError("write on a finished or cancelled session");
    if (absl::Status s = internal::write_all(fd_.get(), data.data(), data.size(), temp_path_);
        !s.ok()) {
      return s;
    }
    crc_ = crc32c_extend(crc_, data);
    persisted_ += data.size();
    return absl::OkStatus();
  }

  absl::StatusOr<ObjectMetadata> finish() override;

  absl::Status cancel() override {
    if (done_) return absl::OkStatus();
    done_ = true;
    fd_.reset();
    if (unlinkat(dir_.get(), temp_name_.c_str(), 0) != 0 && errno != ENOENT) {
      return posix_error(errno, "unlink", temp_path_);
    }
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<LocalStore> store_;  // kept alive while a session exists
  WriteObjectRequest request_;
  std::string session_id_;
  Fd dir_;
  std::string temp_name_;
  std::string temp_path_;  // for messages
  Fd fd_;
  std::uint64_t persisted_;
  std::uint32_t crc_;
  bool done_ = false;
};

class LocalStore : public ObjectStore, public std::enable_shared_from_this<LocalStore> {
 public:
  LocalStore(std::string root_given, std::string root, LocalOptions options)
      : root_given_(std::move(root_given)), root_(std::move(root)), options_(options) {}

  std::string_view backend() const override { return "local"; }
  // The bucket is the root directory.
  std::string url(std::string_view bucket, std::string_view object) const override {
    return internal::display_url("file", bucket.empty() ? "/" : bucket, object);
  }

  StoreCapabilities capabilities() const override {
    StoreCapabilities c;
    c.compose = true;
    c.max_compose_sources = kMaxComposeSources;
    c.resumable_writes = true;
    c.server_end_offset = true;
    c.generations = true;
    c.write_chunk_quantum = 1;
    c.remote = false;
    return c;
  }

  absl::StatusOr<ListObjectsPage> list_objects(const ListObjectsRequest& request) override {
    if (absl::Status s = check_bucket(request.bucket); !s.ok()) return s;
    internal::WalkBounds bounds;
    bounds.prefix = request.prefix;
    bounds.lower = request.start_offset;
    bounds.upper = request.end_offset;
    if (!request.page_token.empty()) {
      std::string token;
      if (!absl::WebSafeBase64Unescape(av(request.page_token), &token)) {
        return absl::InvalidArgumentError(
            absl::StrCat("LIST ", url_for(request.prefix), ": malformed page token"));
      }
      bounds.lower = std::max(bounds.lower, token);
    }
    const std::size_t max_results =
        static_cast<std::size_t>(request.max_results > 0 ? request.max_results : 1000);
    ListObjectsPage page;
    std::size_t emitted = 0;
    std::string next_lower;
    auto full = [&](const std::string& resume_at) {
      if (emitted < max_results) return false;
      next_lower = resume_at;
      return true;
    };
    absl::Status walk = internal::walk_sorted(
        root_dir(), bounds, [&](const std::string& name, const struct stat& st) {
          if (!request.delimiter.empty()) {
            std::size_t pos = name.find(request.delimiter, request.prefix.size());
            if (pos != std::string::npos) {
              std::string rolled = name.substr(0, pos + request.delimiter.size());
              if (full(rolled)) return false;
              page.prefixes.push_back(rolled);
              ++emitted;
              // Skip every other name under this prefix: raise the lower bound past it.
              bounds.lower = prefix_successor(rolled);
              return !bounds.lower.empty();
            }
          }
          if (full(name)) return false;
          page.objects.push_back(metadata_from_stat(name, st));
          ++emitted;
          return true;
        });
    if (!walk.ok()) return internal::annotate(walk, absl::StrCat("LIST ", url_for(request.prefix)));
    if (!next_lower.empty()) page.next_page_token = absl::WebSafeBase64Escape(next_lower);
    return page;
  }

  absl::StatusOr<ObjectMetadata> get_object_metadata(const std::string& bucket,
                                                     const std::string& object) override {
    auto path = existing_path(bucket, object);
    if (!path.ok()) return path.status();
    struct stat st;
    if (stat(path->c_str(), &st) != 0) return not_found_or(errno, "stat", object);
    if (!S_ISREG(st.st_mode)) return not_found(object);
    return metadata_from_stat(object, st);
  }

  absl::StatusOr<ReadObjectResult> read_object(const ReadObjectRequest& request, char* buffer,
                                               std::size_t capacity) override {
    std::uint32_t crc = 0;
    return read_impl(request, capacity,
                     [&](Fd& fd, std::uint64_t offset, std::uint64_t n, bool whole,
                         const std::string& path) -> absl::StatusOr<std::uint32_t> {
                       auto got = internal::pread_full(fd.get(), buffer, n, offset, path);
                       if (!got.ok()) return got.status();
                       if (*got != n) return short_read(path, n, *got);
                       if (whole) crc = crc32c_extend(0, buffer, n);
                       return crc;
                     });
  }

  absl::StatusOr<ReadObjectResult> read_object(const ReadObjectRequest& request,
                                               const ByteSink& sink) override {
    return read_impl(
        request, SIZE_MAX,
        [&](Fd& fd, std::uint64_t offset, std::uint64_t n, bool whole,
            const std::string& path) -> absl::StatusOr<std::uint32_t> {
          std::vector<char> chunk(static_cast<std::size_t>(std::min<std::uint64_t>(n, kCopyChunk)));
          std::uint32_t crc = 0;
          for (std::uint64_t done = 0; done < n;) {
            std::size_t want =
                static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), n - done));
            auto got = internal::pread_full(fd.get(), chunk.data(), want, offset + done, path);
            if (!got.ok()) return got.status();
            if (*got != want) return short_read(path, n, done + *got);
            if (whole) crc = crc32c_extend(crc, chunk.data(), want);
            if (absl::Status s = sink(chunk.data(), want); !s.ok()) return s;
            done += want;
          }
          return crc;
        });
  }

  absl::StatusOr<ObjectMetadata> write_object(const WriteObjectRequest& request,
                                              std::string_view data) override {
    auto session = start_resumable_write(request);
    if (!session.ok()) return session.status();
    if (absl::Status s = (*session)->write(data); !s.ok()) return s;
    return (*session)->finish();
  }

  absl::StatusOr<std::unique_ptr<WriteSession>> start_resumable_write(
      const WriteObjectRequest& request) override {
    if (absl::Status s = check_name(request.bucket, request.object); !s.ok()) return s;
    auto dir = internal::open_parent_beneath(root_, request.object, /*create=*/true);
    if (!dir.ok()) return dir.status();
    const std::string name = absl::StrCat(av(internal::kLocalUploadPrefix), random_suffix());
    const std::string rel_temp = absl::StrCat(parent_of(request.object), name);
    const std::string temp = path_of(rel_temp);
    Fd fd(openat(dir->get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                 0644));
    if (fd.get() < 0) return posix_error(errno, "create", temp);
    (void)fsetxattr(fd.get(), kObjectAttribute, request.object.data(), request.object.size(), 0);
    return std::unique_ptr<WriteSession>(
        new LocalWriteSession(shared_from_this(), request, absl::StrCat("local:", rel_temp),
                              *std::move(dir), name, temp, std::move(fd), 0, 0));
  }

  absl::StatusOr<std::unique_ptr<WriteSession>> resume_resumable_write(
      const WriteObjectRequest& request, const std::string& session_id) override {
    if (absl::Status s = check_name(request.bucket, request.object); !s.ok()) return s;
    std::string_view rel = session_id;
    std::string expected_dir = parent_of(request.object);
    if (!absl::StartsWith(av(rel), "local:") ||
        !absl::StartsWith(av(rel.substr(6)),
                          absl::StrCat(expected_dir, av(internal::kLocalUploadPrefix))) ||
        rel.substr(6 + expected_dir.size()).find('/') != std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("resume ", url_for(request.object), ": '",
                                                     av(session_id),
                                                     "' is not an upload session of this object"));
    }
    std::string temp = path_of(std::string(rel.substr(6)));
    std::string name(rel.substr(6 + expected_dir.size()));
    auto dir = internal::open_parent_beneath(root_, request.object, /*create=*/false);
    if (!dir.ok()) return dir.status();
    Fd fd(openat(dir->get(), name.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() < 0) return not_found_or(errno, "open upload session", request.object);
    // The checksum covers every byte, so re-read what the interrupted writer left.
    std::uint32_t crc = 0;
    std::uint64_t size = 0;
    std::vector<char> chunk(kCopyChunk);
    for (;;) {
      auto got = internal::pread_full(fd.get(), chunk.data(), chunk.size(), size, temp);
      if (!got.ok()) return got.status();
      crc = crc32c_extend(crc, chunk.data(), *got);
      size += *got;
      if (*got < chunk.size()) break;
    }
    return std::unique_ptr<WriteSession>(new LocalWriteSession(shared_from_this(), request,
                                                               session_id, *std::move(dir), name,
                                                               temp, std::move(fd), size, crc));
  }

  absl::StatusOr<ObjectMetadata> compose_object(const ComposeObjectRequest& request) override {
    if (request.sources.empty() ||
        request.sources.size() > static_cast<std::size_t>(kMaxComposeSources)) {
      return absl::InvalidArgumentError(
          absl::StrCat("COMPOSE ", url_for(request.destination), ": ", request.sources.size(),
                       " sources given; between 1 and ", kMaxComposeSources, " are allowed"));
    }
    WriteObjectRequest dest;
    dest.bucket = request.bucket;
    dest.object = request.destination;
    dest.content_type = request.content_type;
    dest.if_generation_match = request.if_generation_match;
    std::vector<std::pair<std::string, std::optional<std::int64_t>>> sources;
    for (const auto& s : request.sources) sources.emplace_back(s.name, s.generation);
    return concatenate(request.bucket, sources, dest, "COMPOSE");
  }

  absl::StatusOr<ObjectMetadata> copy_object(const CopyObjectRequest& request) override {
    if (absl::Status s = check_bucket(request.source_bucket); !s.ok()) return s;
    WriteObjectRequest dest;
    dest.bucket = request.destination_bucket;
    dest.object = request.destination_object;
    dest.if_generation_match = request.if_generation_match;
    return concatenate(request.source_bucket, {{request.source_object, request.source_generation}},
                       dest, "COPY");
  }

  absl::Status delete_object(const DeleteObjectRequest& request) override {
    if (absl::Status s = check_name(request.bucket, request.object); !s.ok()) return s;
    auto dir = internal::open_parent_beneath(root_, request.object, /*create=*/false);
    if (!dir.ok()) {
      if (dir.status().code() == absl::StatusCode::kNotFound) return not_found(request.object);
      return internal::annotate(dir.status(), absl::StrCat("DELETE ", url_for(request.object)));
    }
    const std::string name = base_of(request.object);
    std::lock_guard<std::mutex> lock(lock_for(request.object));
    struct stat st;
    if (fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      return not_found(request.object);
    }
    if (absl::Status s =
            check_generation_precondition(request.if_generation_match, internal::generation_of(st),
                                          absl::StrCat("DELETE ", url_for(request.object)));
        !s.ok()) {
      return s;
    }
    if (unlinkat(dir->get(), name.c_str(), 0) != 0) {
      return not_found_or(errno, "unlink", request.object);
    }
    internal::remove_empty_parents(root_, request.object);
    return absl::OkStatus();
  }

  // The temporary files of writes that never finished (a crashed save), like S3's incomplete
  // multipart uploads: `object` is the name the write was for (kept in an attribute; without
  // user xattrs, the temporary file's own name), `started` its last modification.
  absl::StatusOr<std::vector<PendingUpload>> list_pending_uploads(
      const std::string& bucket, const std::string& prefix) override {
    if (absl::Status s = check_bucket(bucket); !s.ok()) return s;
    internal::WalkBounds bounds;
    bounds.prefix = parent_of(prefix);  // a temporary file sits beside its object
    bounds.temporaries = true;
    std::vector<PendingUpload> out;
    absl::Status walk = internal::walk_sorted(
        root_dir(), bounds, [&](const std::string& name, const struct stat& st) {
          PendingUpload upload;
          upload.id = absl::StrCat("local:", name);
          char object[PATH_MAX];
          const ssize_t n =
              getxattr(path_of(name).c_str(), kObjectAttribute, object, sizeof(object));
          upload.object = n > 0 ? std::string(object, static_cast<std::size_t>(n)) : name;
          upload.started = std::chrono::system_clock::time_point(
              std::chrono::nanoseconds(internal::generation_of(st)));
          if (absl::StartsWith(upload.object, prefix)) out.push_back(std::move(upload));
          return true;
        });
    if (!walk.ok()) return internal::annotate(walk, absl::StrCat("LIST ", url_for(prefix)));
    return out;
  }

  absl::Status abort_pending_upload(const std::string& bucket,
                                    const PendingUpload& upload) override {
    if (absl::Status s = check_bucket(bucket); !s.ok()) return s;
    std::string_view rel = upload.id;
    const std::string what = absl::StrCat("abort the unfinished write of ", url_for(upload.object));
    if (!absl::StartsWith(av(rel), "local:")) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": not a local upload"));
    }
    rel.remove_prefix(6);
    const std::string dir = parent_of(std::string(rel));
    const std::string name(rel.substr(dir.size()));
    if (!absl::StartsWith(name, av(internal::kLocalUploadPrefix)) ||
        (!dir.empty() && !internal::check_local_object_name(dir.substr(0, dir.size() - 1)).ok())) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": not a temporary file of this store"));
    }
    auto parent = internal::open_parent_beneath(root_, rel, /*create=*/false);
    if (!parent.ok()) {
      return parent.status().code() == absl::StatusCode::kNotFound ? absl::OkStatus()
                                                                   : parent.status();
    }
    if (unlinkat(parent->get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      return internal::annotate(posix_error(errno, "unlink", path_of(std::string(rel))), what);
    }
    internal::remove_empty_parents(root_, rel);
    return absl::OkStatus();
  }

  // Renames a finished temporary file into place if the destination precondition holds.
  // `dir` holds the temporary file `temp_name` (`temp` in messages) and receives the object.
  absl::StatusOr<ObjectMetadata> commit(int fd, int dir, const std::string& temp_name,
                                        const std::string& temp, const WriteObjectRequest& request,
                                        std::uint32_t crc, std::uint64_t size) {
    std::string what = absl::StrCat("WRITE ", url_for(request.object));
    auto discard = [&] { unlinkat(dir, temp_name.c_str(), 0); };
    if (request.crc32c && *request.crc32c != crc) {
      discard();
      return absl::DataLossError(absl::StrCat(
          what, ": CRC32C mismatch: the caller expected ", internal::crc32c_text(*request.crc32c),
          " but the bytes written have ", internal::crc32c_text(crc)));
    }
    if (options_.fsync && fsync(fd) != 0) {
      int err = errno;
      discard();
      return posix_error(err, "fsync", temp);
    }
    auto generation = internal::stamp_new_generation(fd, temp);
    if (!generation.ok()) {
      discard();
      return generation.status();
    }
    internal::store_crc32c(fd, *generation, crc);
    std::string path = path_of(request.object);
    const std::string name = base_of(request.object);
    {
      std::lock_guard<std::mutex> lock(lock_for(request.object));
      struct stat st;
      std::optional<std::int64_t> live;
      if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
        live = internal::generation_of(st);
      }
      if (absl::Status s = check_generation_precondition(request.if_generation_match, live, what);
          !s.ok()) {
        discard();
        return s;
      }
      if (renameat(dir, temp_name.c_str(), dir, name.c_str()) != 0) {
        int err = errno;
        discard();
        return posix_error(err, "rename into", path);
      }
    }
    if (options_.fsync) {
      if (fsync(dir) != 0) return posix_error(errno, "fsync directory", parent_dir(path));
    }
    ObjectMetadata m;
    m.bucket = root_given_;
    m.name = request.object;
    m.size = size;
    m.generation = *generation;
    m.metageneration = 1;
    m.crc32c = crc;
    m.storage_class = "LOCAL";
    m.content_type = request.content_type;
    m.updated = std::chrono::system_clock::time_point(std::chrono::nanoseconds(*generation));
    return m;
  }

 private:
  using ReadBody = std::function<absl::StatusOr<std::uint32_t>(
      Fd&, std::uint64_t offset, std::uint64_t n, bool whole, const std::string& path)>;

  absl::StatusOr<ReadObjectResult> read_impl(const ReadObjectRequest& request, std::size_t capacity,
                                             const ReadBody& body) {
    auto path = existing_path(request.bucket, request.object);
    if (!path.ok()) return path.status();
    Fd fd(open(path->c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return not_found_or(errno, "open", request.object);
    struct stat st;
    if (fstat(fd.get(), &st) != 0) return posix_error(errno, "fstat", *path);
    if (!S_ISREG(st.st_mode)) return not_found(request.object);
    std::int64_t generation = internal::generation_of(st);
    std::string what = absl::StrCat("GET ", url_for(request.object));
    if (!request.etag.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": file:// reads pin to a generation, not to an ETag (", request.etag,
                       " was given)"));
    }
    if (request.generation && *request.generation != generation) {
      return absl::NotFoundError(absl::StrCat(what, ": generation ", *request.generation,
                                              " not found (live generation is ", generation, ")"));
    }
    auto size = static_cast<std::uint64_t>(st.st_size);
    if (request.offset > size) {
      return absl::OutOfRangeError(absl::StrCat(
          what, ": offset ", request.offset, " is past the end of the object (", size, " bytes)"));
    }
    std::uint64_t n = size - request.offset;
    if (request.length) n = std::min(n, *request.length);
    if (n > capacity) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", n,
                                                     " bytes to read but the buffer "
                                                     "holds ",
                                                     capacity));
    }
    bool whole = request.offset == 0 && n == size && request.verify_crc32c;
    auto crc = body(fd, request.offset, n, whole, *path);
    if (!crc.ok()) return crc.status();
    ReadObjectResult result;
    result.bytes = n;
    result.object_size = size;
    result.generation = generation;
    result.crc32c = internal::load_crc32c(*path, generation);
    if (whole) {
      // The stored checksum plays the server's part: a mismatch means the file changed or rotted.
      if (auto s = internal::check_whole_object_crc32c(what, n, *crc, result.crc32c,
                                                       request.expected_crc32c);
          !s.ok()) {
        return s;
      }
      result.crc32c_verified = result.crc32c.has_value() || request.expected_crc32c.has_value();
    }
    return result;
  }

  // Copies the sources, in order, into a new object (compose and copy).
  absl::StatusOr<ObjectMetadata> concatenate(
      const std::string& source_bucket,
      const std::vector<std::pair<std::string, std::optional<std::int64_t>>>& sources,
      const WriteObjectRequest& dest, std::string_view verb) {
    if (absl::Status s = check_name(dest.bucket, dest.object); !s.ok()) return s;
    std::vector<Fd> inputs;
    for (const auto& [name, generation] : sources) {
      auto path = existing_path(source_bucket, name);
      if (!path.ok()) return path.status();
      Fd fd(open(path->c_str(), O_RDONLY | O_CLOEXEC));
      if (fd.get() < 0) return not_found_or(errno, "open", name);
      struct stat st;
      if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return not_found(name);
      if (generation && *generation != internal::generation_of(st)) {
        return absl::FailedPreconditionError(absl::StrCat(
            av(verb), " ", url_for(dest.object), ": source ", url_for(name), " generation ",
            *generation, " does not match the live generation ", internal::generation_of(st)));
      }
      inputs.push_back(std::move(fd));
    }
    auto session = start_resumable_write(dest);
    if (!session.ok()) return session.status();
    std::vector<char> chunk(kCopyChunk);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      for (std::uint64_t offset = 0;;) {
        auto got = internal::pread_full(inputs[i].get(), chunk.data(), chunk.size(), offset,
                                        sources[i].first);
        if (!got.ok()) return got.status();
        if (*got == 0) break;
        if (absl::Status s = (*session)->write(std::string_view(chunk.data(), *got)); !s.ok()) {
          return s;
        }
        offset += *got;
      }
    }
    return (*session)->finish();
  }

  absl::Status check_bucket(const std::string& bucket) const {
    if (bucket.empty() || bucket == root_given_ || bucket == root_display()) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrCat("bucket '", bucket, "' is not this local store '", root_display(), "'"));
  }

  absl::Status check_name(const std::string& bucket, const std::string& object) const {
    if (absl::Status s = check_bucket(bucket); !s.ok()) return s;
    return internal::check_local_object_name(object);
  }

  // The object's path, after checking that the name is valid and that the file it resolves
  // to (following any symbolic links) is inside the root.
  absl::StatusOr<std::string> existing_path(const std::string& bucket,
                                            const std::string& object) const {
    if (absl::Status s = check_name(bucket, object); !s.ok()) return s;
    std::string path = path_of(object);
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved) == nullptr) return not_found_or(errno, "open", object);
    if (!root_.empty() && !absl::StartsWith(resolved, absl::StrCat(root_, "/"))) {
      return absl::PermissionDeniedError(absl::StrCat(
          "GET ", url_for(object), ": resolves outside the store root ", root_display()));
    }
    return path;
  }

  ObjectMetadata metadata_from_stat(const std::string& name, const struct stat& st) const {
    ObjectMetadata m;
    m.bucket = root_given_;
    m.name = name;
    m.size = static_cast<std::uint64_t>(st.st_size);
    m.generation = internal::generation_of(st);
    m.metageneration = 1;
    m.crc32c = internal::load_crc32c(path_of(name), m.generation);
    m.storage_class = "LOCAL";
    m.content_type = "application/octet-stream";
    m.updated = std::chrono::system_clock::time_point(std::chrono::nanoseconds(m.generation));
    return m;
  }

  absl::Status not_found(const std::string& object) const {
    return absl::NotFoundError(absl::StrCat("No such object: ", url_for(object)));
  }
  absl::Status not_found_or(int err, std::string_view op, const std::string& object) const {
    if (err == ENOENT || err == ENOTDIR) return not_found(object);
    return posix_error(err, op, path_of(object));
  }
  static absl::Status short_read(const std::string& path, std::uint64_t want, std::uint64_t got) {
    return absl::DataLossError(absl::StrCat("read ", path, ": file ended after ", got, " of ", want,
                                            " bytes (it was truncated while being read)"));
  }

  // "" stands for "/", so joining never doubles the slash.
  std::string path_of(const std::string& rel) const { return absl::StrCat(root_, "/", rel); }
  std::string root_dir() const { return root_.empty() ? "/" : root_; }
  std::string root_display() const { return root_.empty() ? "/" : root_; }
  std::string url_for(std::string_view rel) const {
    return internal::display_url("file", root_dir(), rel);
  }
  static std::string parent_of(const std::string& object) {
    std::size_t slash = object.rfind('/');
    return slash == std::string::npos ? "" : object.substr(0, slash + 1);
  }
  static std::string parent_dir(const std::string& path) {
    std::size_t slash = path.rfind('/');
    return slash == 0 ? "/" : path.substr(0, slash);
  }
  static std::string base_of(const std::string& object) {
    std::size_t slash = object.rfind('/');
    return slash == std::string::npos ? object : object.substr(slash + 1);
  }
  // The smallest string greater than every string starting with `p`; empty when none.
  static std::string prefix_successor(std::string p) {
    while (!p.empty() && static_cast<unsigned char>(p.back()) == 0xff) p.pop_back();
    if (!p.empty()) p.back() = static_cast<char>(static_cast<unsigned char>(p.back()) + 1);
    return p;
  }

  std::mutex& lock_for(const std::string& object) {
    return locks_[std::hash<std::string>{}(object) % locks_.size()];
  }

  std::string root_given_;
  std::string root_;  // canonical, no trailing slash; "" for "/"
  LocalOptions options_;
  std::array<std::mutex, 64> locks_;  // std::mutex: see core/thread_pool.h
};

absl::StatusOr<ObjectMetadata> LocalWriteSession::finish() {
  if (done_) return absl::FailedPreconditionError("finish on a finished or cancelled session");
  done_ = true;
  auto result =
      store_->commit(fd_.get(), dir_.get(), temp_name_, temp_path_, request_, crc_, persisted_);
  fd_.reset();
  return result;
}

}  // namespace

absl::StatusOr<std::shared_ptr<ObjectStore>> make_local_store(const std::string& root,
                                                              LocalOptions options) {
  char resolved[PATH_MAX];
  if (root.empty() || realpath(root.c_str(), resolved) == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("local store root '", root, "' does not exist or cannot be resolved"));
  }
  struct stat st;
  if (stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("local store root '", root, "' is not a directory"));
  }
  std::string canonical(resolved);
  if (canonical == "/") canonical.clear();
  return std::shared_ptr<ObjectStore>(
      std::make_shared<LocalStore>(root, std::move(canonical), options));
}

}  // namespace dataflux
