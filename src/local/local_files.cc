#include "local/local_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <utility>
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

// Whether `path` (which may contain symbolic links) resolves to a place below `root` ("/" for
// the filesystem root, else canonical with no trailing slash).
bool resolves_below(const std::string& root, const std::string& path) {
  if (root == "/") return true;
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) return false;
  return absl::StartsWith(resolved, absl::StrCat(root, "/"));
}

struct Walk {
  const std::string& root;
  WalkBounds& b;
  absl::Status& error;
  const std::function<bool(const std::string&, const struct stat&)>& visit;
  std::vector<std::pair<dev_t, ino_t>> ancestors;  // the directories being walked, outermost first
};

// Returns false when the walk must stop.
bool walk_dir(Walk& w, const std::string& dir, const std::string& rel) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    if (errno != ENOENT) w.error = posix_error(errno, "opendir", dir);
    return errno == ENOENT;
  }
  struct stat self;
  const std::pair<dev_t, ino_t> id = fstat(dirfd(d), &self) == 0
                                         ? std::make_pair(self.st_dev, self.st_ino)
                                         : std::make_pair(dev_t{}, ino_t{});
  if (std::find(w.ancestors.begin(), w.ancestors.end(), id) != w.ancestors.end()) {
    closedir(d);  // a link back to a directory we are inside of: a loop, not more names
    return true;
  }
  std::vector<Entry> entries;
  while (struct dirent* e = readdir(d)) {
    std::string_view name(e->d_name);
    if (name == "." || name == "..") continue;
    const bool temporary = is_local_temp_name(name);
    if (temporary && !w.b.temporaries) continue;
    bool is_dir = e->d_type == DT_DIR;
    bool is_link = e->d_type == DT_LNK;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      is_dir = S_ISDIR(st.st_mode);
      is_link = S_ISLNK(st.st_mode);
    }
    if (is_link) {
      // Followed only where it stays below the root: no name of the store is outside it.
      if (!resolves_below(w.root, absl::StrCat(dir, "/", av(name)))) continue;
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, 0) != 0) continue;
      is_dir = S_ISDIR(st.st_mode);
    }
    if (temporary && is_dir) continue;
    entries.push_back({std::string(name) + (is_dir ? "/" : ""), std::string(name), is_dir});
  }
  closedir(d);
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.key < b.key; });
  w.ancestors.push_back(id);
  bool go_on = true;
  for (const Entry& e : entries) {
    std::string full = rel + e.key;
    WalkBounds& b = w.b;
    // Names with `full` as a prefix form one contiguous range; compare it with the bounds.
    bool related = starts_with(full, b.prefix) || (e.is_dir && starts_with(b.prefix, full));
    if (!related) {
      if (full > b.prefix) {
        go_on = false;  // past every name with the prefix
        break;
      }
      continue;
    }
    if (!b.upper.empty() && full >= b.upper) {
      go_on = false;
      break;
    }
    if (full < b.lower && !(e.is_dir && starts_with(b.lower, full))) continue;
    std::string path = dir + "/" + e.name;
    if (e.is_dir) {
      if (!walk_dir(w, path, full)) {
        go_on = false;
        break;
      }
      continue;
    }
    if (is_local_temp_name(e.name) != b.temporaries) continue;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (!w.visit(full, st)) {
      go_on = false;
      break;
    }
  }
  w.ancestors.pop_back();
  return go_on;
}

std::atomic<int> g_kernel_openat2{-1};  // -1: not probed yet
std::atomic<bool> g_openat2_disabled{false};

long openat2_call(int dirfd, const char* path, int flags) {
  struct open_how how {};
  how.flags = static_cast<std::uint64_t>(flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  return syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

// The directory `rel` ("" = the root itself) below root_fd, or -1 with errno set.
int open_dir_at(int root_fd, const std::string& rel) {
  constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  if (rel.empty()) return fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
  if (openat2_in_use()) return static_cast<int>(openat2_call(root_fd, rel.c_str(), kFlags));
  int current = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
  for (absl::string_view segment : absl::StrSplit(av(rel), '/')) {
    if (current < 0) return -1;
    const int next = openat(current, std::string(segment).c_str(), kFlags | O_NOFOLLOW);
    const int err = errno;
    close(current);
    errno = err;
    current = next;
  }
  return current;
}

// Why `rel`, a directory below `root` that the file `object` needs, could not be opened.
absl::Status directory_error(int err, const std::string& root, const std::string& rel,
                             std::string_view object) {
  const std::string path = absl::StrCat(root == "/" ? "" : root, "/", rel);
  auto escapes = [&](const std::string& at) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot store '", av(object), "': ", at, " is a symbolic link ",
        openat2_in_use() ? "that leads outside the store root "
                         : "(without openat2 this kernel follows none below the store root ",
        root, openat2_in_use() ? " (or a loop of links)" : ")"));
  };
  if (err == EXDEV || err == ELOOP) return escapes(path);
  if (err == ENOTDIR) {
    std::string at = root == "/" ? "" : root;
    for (absl::string_view segment : absl::StrSplit(av(rel), '/')) {
      absl::StrAppend(&at, "/", segment);
      struct stat st;
      if (lstat(at.c_str(), &st) != 0) break;
      if (S_ISLNK(st.st_mode)) return escapes(at);
      if (!S_ISDIR(st.st_mode)) {
        return absl::FailedPreconditionError(
            absl::StrCat("cannot store '", av(object), "': ", at,
                         " is a file, so no object can live below it on the local filesystem"));
      }
    }
  }
  return posix_error(err, "open directory", path);
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

Fd& Fd::operator=(Fd&& o) noexcept {
  reset();
  fd_ = o.release();
  return *this;
}

int Fd::release() { return std::exchange(fd_, -1); }

void Fd::reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool openat2_in_use() {
  if (g_openat2_disabled.load()) return false;
  int known = g_kernel_openat2.load();
  if (known < 0) {
    // Absent (ENOSYS) or refused by a seccomp filter (EPERM, as older container runtimes do).
    const long fd = openat2_call(AT_FDCWD, "/", O_PATH | O_CLOEXEC);
    known = fd >= 0 ? 1 : (errno == ENOSYS || errno == EPERM ? 0 : 1);
    if (fd >= 0) close(static_cast<int>(fd));
    g_kernel_openat2 = known;
  }
  return known == 1;
}

void set_openat2_enabled_for_testing(bool enabled) { g_openat2_disabled = !enabled; }

absl::StatusOr<Fd> open_parent_beneath(const std::string& root, std::string_view relative_file,
                                       bool create) {
  const std::string root_dir = root.empty() ? "/" : root;
  Fd root_fd(open(root_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root_fd.get() < 0) return posix_error(errno, "open store root", root_dir);
  const std::size_t slash = relative_file.rfind('/');
  const std::string dir(slash == std::string_view::npos ? "" : relative_file.substr(0, slash));
  Fd fd(open_dir_at(root_fd.get(), dir));
  if (fd.get() >= 0) return fd;
  if (errno != ENOENT || !create) return directory_error(errno, root_dir, dir, relative_file);
  // Made one level at a time, each inside a directory already opened below the root.
  Fd parent(fcntl(root_fd.get(), F_DUPFD_CLOEXEC, 0));
  std::string prefix;
  for (absl::string_view segment : absl::StrSplit(av(dir), '/')) {
    prefix = prefix.empty() ? std::string(segment) : absl::StrCat(prefix, "/", segment);
    Fd next(open_dir_at(root_fd.get(), prefix));
    if (next.get() < 0 && errno == ENOENT) {
      if (mkdirat(parent.get(), std::string(segment).c_str(), 0755) != 0 && errno != EEXIST) {
        return posix_error(errno, "mkdir", absl::StrCat(root, "/", prefix));
      }
      next = Fd(open_dir_at(root_fd.get(), prefix));
    }
    if (next.get() < 0) return directory_error(errno, root_dir, prefix, relative_file);
    parent = std::move(next);
  }
  return parent;
}

void remove_empty_parents(const std::string& root, std::string_view relative_file) {
  std::string_view rel = relative_file;
  for (std::size_t slash = rel.rfind('/'); slash != std::string_view::npos;
       slash = rel.rfind('/')) {
    rel = rel.substr(0, slash);
    auto parent = open_parent_beneath(root, rel, /*create=*/false);
    if (!parent.ok()) return;
    const std::size_t last = rel.rfind('/');
    const std::string base(last == std::string_view::npos ? rel : rel.substr(last + 1));
    // Not empty, gone, or a symbolic link (ENOTDIR): stop climbing.
    if (unlinkat(parent->get(), base.c_str(), AT_REMOVEDIR) != 0) return;
  }
}

absl::Status walk_sorted(const std::string& root, WalkBounds& bounds,
                         const std::function<bool(const std::string&, const struct stat&)>& visit) {
  absl::Status error;
  Walk walk{root, bounds, error, visit, {}};
  walk_dir(walk, root, "");
  return error;
}

}  // namespace dataflux::internal
