#include "local/local_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/absl_view.h"
#include "local/local_paths.h"

namespace dataflux::internal {
namespace {

constexpr char kCrcAttribute[] = "user.dataflux.crc32c";

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

struct Entry {
  std::string key;  // name, plus '/' for directories, so sorting keys sorts full names
  std::string name;
  bool is_dir;
};

// Returns false when the walk must stop.
bool walk_dir(const std::string& dir, const std::string& rel, WalkBounds& b, absl::Status& error,
              const std::function<bool(const std::string&, const struct stat&)>& visit) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    if (errno != ENOENT) error = posix_error(errno, "opendir", dir);
    return errno == ENOENT;
  }
  std::vector<Entry> entries;
  while (struct dirent* e = readdir(d)) {
    std::string_view name(e->d_name);
    if (name == "." || name == ".." || is_local_temp_name(name)) continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) {
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, 0) != 0) continue;
      is_dir = S_ISDIR(st.st_mode);
    }
    entries.push_back({std::string(name) + (is_dir ? "/" : ""), std::string(name), is_dir});
  }
  closedir(d);
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.key < b.key; });
  for (const Entry& e : entries) {
    std::string full = rel + e.key;
    // Names with `full` as a prefix form one contiguous range; compare it with the bounds.
    bool related = starts_with(full, b.prefix) || (e.is_dir && starts_with(b.prefix, full));
    if (!related) {
      if (full > b.prefix) return false;  // past every name with the prefix
      continue;
    }
    if (!b.upper.empty() && full >= b.upper) return false;
    if (full < b.lower && !(e.is_dir && starts_with(b.lower, full))) continue;
    std::string path = dir + "/" + e.name;
    if (e.is_dir) {
      if (!walk_dir(path, full, b, error, visit)) return false;
      continue;
    }
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (!visit(full, st)) return false;
  }
  return true;
}

}  // namespace

absl::Status posix_error(int err, std::string_view operation, std::string_view path) {
  std::string message = absl::StrCat(av(operation), " ", av(path), ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    default:
      return absl::InternalError(message);
  }
}

std::int64_t generation_of(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

absl::StatusOr<std::int64_t> stamp_new_generation(int fd, std::string_view path) {
  static std::atomic<std::int64_t> last{0};
  std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  std::int64_t previous = last.load();
  std::int64_t generation;
  do {
    generation = std::max(now, previous + 1);
  } while (!last.compare_exchange_weak(previous, generation));
  struct timespec times[2];
  times[0].tv_sec = 0;
  times[0].tv_nsec = UTIME_OMIT;
  times[1].tv_sec = generation / 1'000'000'000;
  times[1].tv_nsec = generation % 1'000'000'000;
  if (futimens(fd, times) != 0) return posix_error(errno, "futimens", path);
  // Read back: the filesystem may round the timestamp.
  struct stat st;
  if (fstat(fd, &st) != 0) return posix_error(errno, "fstat", path);
  return generation_of(st);
}

void store_crc32c(int fd, std::int64_t generation, std::uint32_t crc) {
  std::string value = absl::StrCat(generation, ":", crc);
  (void)fsetxattr(fd, kCrcAttribute, value.data(), value.size(), 0);  // optional
}

std::optional<std::uint32_t> load_crc32c(const std::string& path, std::int64_t generation) {
  char value[64];
  ssize_t n = getxattr(path.c_str(), kCrcAttribute, value, sizeof(value) - 1);
  if (n <= 0) return std::nullopt;
  std::vector<absl::string_view> parts = absl::StrSplit(absl::string_view(value, n), ':');
  std::int64_t stored_generation;
  std::uint32_t crc;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &stored_generation) ||
      !absl::SimpleAtoi(parts[1], &crc) || stored_generation != generation) {
    return std::nullopt;
  }
  return crc;
}

absl::Status write_all(int fd, const char* data, std::size_t size, std::string_view path) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return posix_error(errno, "write", path);
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::size_t> pread_full(int fd, char* data, std::size_t size, std::uint64_t offset,
                                       std::string_view path) {
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, data + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return posix_error(errno, "read", path);
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

absl::Status fsync_directory(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return posix_error(errno, "open directory", dir);
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0) return posix_error(err, "fsync directory", dir);
  return absl::OkStatus();
}

absl::Status make_parent_directories(const std::string& root, std::string_view relative_file) {
  std::size_t slash = relative_file.rfind('/');
  if (slash == std::string_view::npos) return absl::OkStatus();
  std::string path = root;
  for (absl::string_view segment : absl::StrSplit(av(relative_file.substr(0, slash)), '/')) {
    absl::StrAppend(&path, "/", segment);
    if (mkdir(path.c_str(), 0755) == 0) continue;
    if (errno != EEXIST) return posix_error(errno, "mkdir", path);
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return posix_error(errno, "stat", path);
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot store '", av(relative_file), "': ", path,
                       " is a file, so no object can live below it on the local filesystem"));
    }
  }
  return absl::OkStatus();
}

void remove_empty_parents(const std::string& root, std::string_view relative_file) {
  std::string_view rel = relative_file;
  for (std::size_t slash = rel.rfind('/'); slash != std::string_view::npos;
       slash = rel.rfind('/')) {
    rel = rel.substr(0, slash);
    std::string dir = absl::StrCat(root, "/", av(rel));
    if (rmdir(dir.c_str()) != 0) return;  // not empty (or gone): stop climbing
  }
}

absl::Status walk_sorted(const std::string& root, WalkBounds& bounds,
                         const std::function<bool(const std::string&, const struct stat&)>& visit) {
  absl::Status error;
  walk_dir(root, "", bounds, error, visit);
  return error;
}

}  // namespace dataflux::internal
