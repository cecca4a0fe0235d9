// cp, mv, rm: the subcommands that move and delete objects, many at once.
//
// Every copy is store to store (a local path is the file:// store) and atomic per object:
//   - to a local path: into a temporary file in the destination directory, renamed into place
//     (without replacing anything under -n): one read pinned to the listed generation and
//     checked against the listed CRC32C, or, above 8 MiB, 8 MiB ranges read in parallel
//     into buffers and written to their place in the file, all pinned to one generation (S3: ETag),
//     their CRC32Cs combined and checked against the object's;
//   - within one cloud (gs→gs, s3→s3): the server-side copy, pinned to the listed generation,
//     its CRC32C compared with the source's;
//   - otherwise: the source read as one stream (pinned, CRC32C-checked) into an Uploader
//     (parallel parts, published only on commit; under -n only if nothing is there).
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "dataflux/crc32c.h"
#include "dataflux/listing.h"
#include "dataflux/upload.h"

namespace dataflux::cli {
namespace {

constexpr std::uint64_t kServerCopyLimit = 5ull << 30;  // S3 CopyObject's limit
// Downloads: objects above kRangeSize are read as ranges of it, kRangesInFlight at once (each
// a buffer drawn from the memory budget).
constexpr std::uint64_t kRangeSize = 8ull << 20;
constexpr int kRangesInFlight = 16;
constexpr std::uint64_t kPartSize = 16ull << 20;
constexpr int kPartsInFlight = 4;
constexpr std::uint64_t kMemoryBudget = 512ull << 20;  // part and range buffers, all jobs

// Bytes of upload parts and download ranges in memory; a transfer takes its share before it starts
// and gives it back when done (Reservation), so every waiter is woken by a release.
class MemoryBudget {
 public:
  class Reservation {
   public:
    Reservation(MemoryBudget& budget, std::uint64_t bytes) : budget_(budget), bytes_(bytes) {
      std::unique_lock<std::mutex> lock(budget_.mu_);
      budget_.cv_.wait(
          lock, [&] { return budget_.used_ == 0 || budget_.used_ + bytes_ <= kMemoryBudget; });
      budget_.used_ += bytes_;
    }
    ~Reservation() {
      {
        std::lock_guard<std::mutex> lock(budget_.mu_);
        budget_.used_ -= bytes_;
      }
      budget_.cv_.notify_all();
    }
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;

   private:
    MemoryBudget& budget_;
    const std::uint64_t bytes_;
  };

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t used_ = 0;
};

struct Job {
  const Location* source = nullptr;
  ObjectEntry object;
  std::string destination;  // object name in the destination's bucket
};

enum class Outcome { kDone, kSkipped };

std::string errno_text(int error) { return std::strerror(error); }

std::string random_hex() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("%016x", rng());
}

// A local file being written: removed unless released.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  absl::Status open() {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) {
      return absl::PermissionDeniedError(absl::StrCat("create ", path_, ": ", errno_text(errno)));
    }
    return absl::OkStatus();
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  absl::Status close() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      return absl::DataLossError(absl::StrCat("close ", path_, ": ", errno_text(errno)));
    }
    return absl::OkStatus();
  }
  void release() { path_.clear(); }

 private:
  std::string path_;
  int fd_ = -1;
};

class Copier {
 public:
  Copier(const CpOptions& options, const Location& destination, Progress& progress)
      : options_(options), destination_(destination), progress_(progress) {}

  absl::StatusOr<Outcome> copy(const Job& job) {
    if (destination_.is_local()) return download(job);
    if (options_.no_clobber) {
      // Skip what is there without moving its bytes; the precondition on the write itself
      // keeps it atomic against a writer that appears meanwhile.
      auto existing =
          destination_.store->get_object_metadata(destination_.url.bucket, job.destination);
      if (existing.ok()) return Outcome::kSkipped;
      if (!absl::IsNotFound(existing.status())) return existing.status();
    }
    const bool same_cloud = job.source->url.scheme == destination_.url.scheme;
    if (same_cloud && job.object.size <= kServerCopyLimit) return server_copy(job);
    return stream(job);
  }

 private:
  absl::StatusOr<Outcome> download(const Job& job) {
    const std::string path = destination_.path_of(job.destination);
    const std::filesystem::path target(path);
    std::error_code ec;
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) {
      return absl::PermissionDeniedError(
          absl::StrCat("cp: create directory ", target.parent_path().string(), ": ", ec.message()));
    }
    if (options_.no_clobber && ::access(path.c_str(), F_OK) == 0) return Outcome::kSkipped;
    TempFile temp(absl::StrCat(target.parent_path().string(), "/.", target.filename().string(),
                               ".dataflux-cp-", random_hex()));
    if (auto s = temp.open(); !s.ok()) return s;
    auto written = job.object.size > kRangeSize ? read_ranges(job, temp.fd(), temp.path())
                                                : read_whole(job, temp.fd(), temp.path());
    if (!written.ok()) return written.status();
    if (auto s = temp.close(); !s.ok()) return s;
    if (options_.no_clobber) {
      if (::renameat2(AT_FDCWD, temp.path().c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) !=
          0) {
        if (errno == EEXIST) return Outcome::kSkipped;
        return absl::PermissionDeniedError(
            absl::StrCat("cp: rename into ", path, ": ", errno_text(errno)));
      }
    } else if (::rename(temp.path().c_str(), path.c_str()) != 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("cp: rename into ", path, ": ", errno_text(errno)));
    }
    temp.release();
    return Outcome::kDone;
  }

  // One read, pinned to the listed generation and checked against the listed CRC32C.
  absl::StatusOr<std::uint64_t> read_whole(const Job& job, int fd, const std::string& path) {
    ReadObjectRequest read;
    read.bucket = job.source->url.bucket;
    read.object = job.object.name;
    if (job.object.generation != 0) read.generation = job.object.generation;
    read.expected_crc32c = job.object.crc32c;
    std::uint64_t at = 0;
    auto result = job.source->store->read_object(read, [&](const char* data, std::size_t n) {
      if (auto s = write_at(fd, path, data, n, at); !s.ok()) return s;
      at += n;
      progress_.add_bytes(n);
      return absl::OkStatus();
    });
    if (!result.ok()) return result.status();
    if (job.object.generation != 0 && result->generation != 0 &&
        result->generation != job.object.generation) {
      return changed(job, result->generation);
    }
    return at;
  }

  // A large object: a stat (its generation, ETag and CRC32C), then ranges of kRangeSize read
  // in parallel and written to their place in the file, each pinned to that generation (S3: to
  // that ETag with If-Match), their CRC32Cs combined and checked against the object's.
  absl::StatusOr<std::uint64_t> read_ranges(const Job& job, int fd, const std::string& path) {
    ObjectStore& store = *job.source->store;
    auto meta = store.get_object_metadata(job.source->url.bucket, job.object.name);
    if (!meta.ok()) return meta.status();
    if (job.object.generation != 0 && meta->generation != 0 &&
        meta->generation != job.object.generation) {
      return changed(job, meta->generation);
    }
    const std::uint64_t size = meta->size;
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      return absl::ResourceExhaustedError(
          absl::StrCat("size ", path, " to ", size, " bytes: ", errno_text(errno)));
    }
    const std::size_t ranges = static_cast<std::size_t>((size + kRangeSize - 1) / kRangeSize);
    std::vector<std::uint32_t> crcs(ranges, 0);
    std::vector<absl::Status> errors(ranges);
    std::mutex file_mu;
    parallel_for(ranges, kRangesInFlight, [&](std::size_t i) {
      ReadObjectRequest read;
      read.bucket = job.source->url.bucket;
      read.object = job.object.name;
      read.offset = i * kRangeSize;
      read.length = std::min<std::uint64_t>(kRangeSize, size - read.offset);
      if (meta->generation != 0) read.generation = meta->generation;
      read.etag = meta->etag;
      // Into a buffer (the transport's thread only copies bytes in), then checksummed and
      // written on this thread: many ranges' CRC32C and writes run in parallel.
      MemoryBudget::Reservation reservation(budget_, *read.length);
      std::unique_ptr<char[]> buffer(new char[*read.length]);
      auto result = store.read_object(read, buffer.get(), *read.length);
      if (!result.ok()) {
        errors[i] = result.status();
        return;
      }
      if (result->bytes != *read.length) {
        errors[i] = absl::DataLossError(absl::StrCat("range at ", read.offset, ": ", result->bytes,
                                                     " bytes of ", *read.length));
        return;
      }
      crcs[i] = crc32c_extend(0, buffer.get(), *read.length);
      // One writer at a time: the kernel serialises writes to one file anyway (ext4 takes the
      // inode lock), and many threads spinning on it cost seconds of system time per GiB.
      std::lock_guard<std::mutex> lock(file_mu);
      errors[i] = write_at(fd, path, buffer.get(), *read.length, read.offset);
      if (errors[i].ok()) progress_.add_bytes(*read.length);
    });
    for (const auto& error : errors) {
      if (!error.ok()) return error;
    }
    if (meta->crc32c) {
      std::uint32_t whole = crcs[0];
      for (std::size_t i = 1; i < ranges; ++i) {
        whole = crc32c_combine(whole, crcs[i],
                               std::min<std::uint64_t>(kRangeSize, size - i * kRangeSize));
      }
      if (whole != *meta->crc32c) {
        return absl::DataLossError(absl::StrCat("the bytes read (CRC32C ", crc32c_to_base64(whole),
                                                ") do not match the object's CRC32C (",
                                                crc32c_to_base64(*meta->crc32c), ")"));
      }
    }
    return size;
  }

  static absl::Status write_at(int fd, const std::string& path, const char* data, std::size_t n,
                               std::uint64_t offset) {
    while (n > 0) {
      const ssize_t wrote = ::pwrite(fd, data, n, static_cast<off_t>(offset));
      if (wrote < 0) {
        if (errno == EINTR) continue;
        return absl::ResourceExhaustedError(absl::StrCat("write ", path, ": ", errno_text(errno)));
      }
      data += wrote;
      n -= static_cast<std::size_t>(wrote);
      offset += static_cast<std::uint64_t>(wrote);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Outcome> server_copy(const Job& job) {
    CopyObjectRequest request;
    request.source_bucket = job.source->url.bucket;
    request.source_object = job.object.name;
    if (job.object.generation != 0) request.source_generation = job.object.generation;
    request.destination_bucket = destination_.url.bucket;
    request.destination_object = job.destination;
    if (options_.no_clobber) request.if_generation_match = 0;
    auto copied = destination_.store->copy_object(request);
    if (!copied.ok()) {
      if (options_.no_clobber && absl::IsFailedPrecondition(copied.status())) {
        return Outcome::kSkipped;
      }
      return copied.status();
    }
    if (copied->size != job.object.size ||
        (copied->crc32c && job.object.crc32c && *copied->crc32c != *job.object.crc32c)) {
      return absl::DataLossError(absl::StrCat(
          "cp ", job.source->url_of(job.object.name), " -> ", destination_.url_of(job.destination),
          ": the copy (", copied->size, " bytes, CRC32C ",
          copied->crc32c ? crc32c_to_base64(*copied->crc32c) : "-",
          ") does not match the source as listed (", job.object.size, " bytes, CRC32C ",
          job.object.crc32c ? crc32c_to_base64(*job.object.crc32c) : "-", ")"));
    }
    progress_.add_bytes(copied->size);
    return Outcome::kDone;
  }

  absl::StatusOr<Outcome> stream(const Job& job) {
    MemoryBudget::Reservation reservation(
        budget_, std::min<std::uint64_t>(std::max<std::uint64_t>(job.object.size, 1),
                                         kPartSize * kPartsInFlight));
    UploadOptions upload;
    upload.part_size = kPartSize;
    upload.max_parts_in_flight = kPartsInFlight;
    upload.expected_size = job.object.size;
    if (options_.no_clobber) upload.if_generation_match = 0;
    auto uploader =
        Uploader::create(destination_.store, destination_.url.bucket, job.destination, upload);
    if (!uploader.ok()) return uploader.status();
    ReadObjectRequest read;
    read.bucket = job.source->url.bucket;
    read.object = job.object.name;
    if (job.object.generation != 0) read.generation = job.object.generation;
    read.expected_crc32c = job.object.crc32c;
    auto result = job.source->store->read_object(read, [&](const char* data, std::size_t n) {
      progress_.add_bytes(n);
      return (*uploader)->write(data, n);
    });
    if (!result.ok()) {
      (void)(*uploader)->abort();
      return result.status();
    }
    auto published = (*uploader)->commit();
    if (!published.ok()) {
      if (options_.no_clobber && absl::IsFailedPrecondition(published.status())) {
        return Outcome::kSkipped;
      }
      return published.status();
    }
    return Outcome::kDone;
  }

  static absl::Status changed(const Job& job, std::int64_t now) {
    return absl::FailedPreconditionError(
        absl::StrCat("the source changed during the copy (generation ", job.object.generation,
                     " was listed, ", now, " is live now); nothing was written"));
  }

  const CpOptions& options_;
  const Location& destination_;
  Progress& progress_;
  MemoryBudget budget_;
};

// The destination names a container (a directory or prefix) rather than one object.
bool is_container(const CpOptions& options, const Location& destination) {
  const std::string& object = destination.url.object;
  if (object.empty() || absl::EndsWith(object, "/") || absl::EndsWith(destination.text, "/")) {
    return true;
  }
  if (options.sources.size() > 1) return true;
  if (destination.is_local()) {
    std::error_code ec;
    return std::filesystem::is_directory(destination.path_of(object), ec);
  }
  return false;
}

std::string as_prefix(std::string name) {
  if (!name.empty() && name.back() != '/') name += '/';
  return name;
}

std::string describe(const Job& job, const Location& destination, const char* verb) {
  return absl::StrCat(verb, " ", job.source->url_of(job.object.name), " -> ",
                      destination.url_of(job.destination));
}

}  // namespace

int run_cp(const CpOptions& options, const Io& io) {
  const char* verb = options.move ? "mv" : "cp";
  bool usage = false;
  auto destination = open_location(options.destination, &usage);
  if (!destination.ok()) {
    std::fprintf(io.err, "dataflux: %s\n", destination.status().ToString().c_str());
    return usage ? kExitUsage : kExitFailed;
  }
  Failures failures(io);
  std::vector<Location> sources;
  if (open_locations(options.sources, io, failures, &sources) == kExitUsage) return kExitUsage;
  const bool container = is_container(options, *destination);
  const std::string into = as_prefix(destination->url.object);

  // Expand the sources into one job per object.
  std::vector<Job> jobs;
  std::uint64_t total_bytes = 0;
  for (const auto& source : sources) {
    auto expansion = expand(source, options.recursive, verb, ListOptions{}, failures);
    if (!expansion) continue;
    // An object goes to DEST, or into it by its base name; cp -r DIR DEST/ puts DIR's objects
    // under DEST/DIR/, as cp, gcloud and gsutil do.
    const std::string base = base_name(source.url.object);
    const std::string under =
        container ? into + (base.empty() ? "" : base + "/") : as_prefix(destination->url.object);
    for (auto& object : expansion->objects) {
      std::string name = expansion->exact ? (container ? into + base : destination->url.object)
                                          : under + object.name.substr(expansion->prefix.size());
      total_bytes += object.size;
      jobs.push_back(Job{&source, std::move(object), std::move(name)});
    }
  }

  Progress progress(io, options.move ? "Moved" : "Copied", jobs.size(), total_bytes);
  Copier copier(options, *destination, progress);
  parallel_for(jobs.size(), options.jobs, [&](std::size_t i) {
    const Job& job = jobs[i];
    auto outcome = copier.copy(job);
    if (!outcome.ok()) {
      progress.object_failed();
      std::string message =
          absl::StrCat(describe(job, *destination, verb), ": ", outcome.status().message());
      if (absl::IsNotFound(outcome.status()) && job.object.generation != 0) {
        // A read pinned to the listed generation finds it gone: overwritten or deleted.
        absl::StrAppend(&message,
                        " (the source changed or was deleted during the copy; "
                        "nothing was written)");
      }
      failures.add(absl::Status(outcome.status().code(), message));
      return;
    }
    if (*outcome == Outcome::kSkipped) {
      progress.object_skipped();
      return;
    }
    if (options.move) {
      DeleteObjectRequest remove;
      remove.bucket = job.source->url.bucket;
      remove.object = job.object.name;
      if (job.object.generation != 0) remove.if_generation_match = job.object.generation;
      if (auto s = job.source->store->delete_object(remove); !s.ok()) {
        progress.object_failed();
        failures.add(absl::Status(s.code(), absl::StrCat(describe(job, *destination, verb),
                                                         ": copied, but deleting the source "
                                                         "failed: ",
                                                         s.message())));
        return;
      }
    }
    progress.object_done();
  });
  progress.finish();
  return failures.count() > 0 ? kExitFailed : kExitOk;
}

int run_rm(const RmOptions& options, const Io& io) {
  Failures failures(io);
  struct Doomed {
    const Location* location;
    std::string name;
  };
  std::vector<Location> locations;
  if (open_locations(options.urls, io, failures, &locations) == kExitUsage) return kExitUsage;
  std::vector<Doomed> doomed;
  ListOptions list;  // everything under a prefix, temporaries and placeholders included
  list.skip_directory_placeholders = false;
  list.skip_temporary_objects = false;
  for (const auto& location : locations) {
    auto expansion = expand(location, options.recursive, "rm", list, failures);
    if (!expansion) continue;
    for (auto& object : expansion->objects) doomed.push_back({&location, std::move(object.name)});
  }
  Progress progress(io, "Removed", doomed.size(), 0);
  parallel_for(doomed.size(), options.jobs, [&](std::size_t i) {
    DeleteObjectRequest request;
    request.bucket = doomed[i].location->url.bucket;
    request.object = doomed[i].name;
    if (auto s = doomed[i].location->store->delete_object(request); !s.ok()) {
      progress.object_failed();
      failures.add(s);
      return;
    }
    progress.object_done();
  });
  progress.finish();
  return failures.count() > 0 ? kExitFailed : kExitOk;
}

}  // namespace dataflux::cli
