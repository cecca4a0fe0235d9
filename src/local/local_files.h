// File-level building blocks of the local store: POSIX calls wrapped into absl::Status, the
// generation stamp, the checksum attribute, and a byte-ordered directory walk.
#ifndef DATAFLUX_SRC_LOCAL_LOCAL_FILES_H_
#define DATAFLUX_SRC_LOCAL_LOCAL_FILES_H_

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dataflux::internal {

// absl::Status for a failed POSIX call: NotFound for ENOENT/ENOTDIR, PermissionDenied for
// EACCES/EPERM, ResourceExhausted for ENOSPC/EDQUOT, Internal otherwise. The message names
// the operation, the path and strerror.
absl::Status posix_error(int err, std::string_view operation, std::string_view path);

// A generation is the file's mtime in nanoseconds. Writers stamp each new file with a value
// larger than any this process stamped before, so two writes never share a generation.
std::int64_t generation_of(const struct stat& st);
absl::StatusOr<std::int64_t> stamp_new_generation(int fd, std::string_view path);

// The CRC32C of a file's bytes is kept in an extended attribute together with the generation
// it was computed for, so a file changed by another program is not trusted. Filesystems
// without user xattrs simply have no stored checksum.
void store_crc32c(int fd, std::int64_t generation, std::uint32_t crc);
std::optional<std::uint32_t> load_crc32c(const std::string& path, std::int64_t generation);

// Writes all of [data, data + size) at the current offset, retrying short writes and EINTR.
absl::Status write_all(int fd, const char* data, std::size_t size, std::string_view path);
// Reads exactly `size` bytes at `offset` unless the file ends first; returns bytes read.
absl::StatusOr<std::size_t> pread_full(int fd, char* data, std::size_t size, std::uint64_t offset,
                                       std::string_view path);

// A file descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  int get() const { return fd_; }
  int release();
  void reset();

 private:
  int fd_;
};

// The directory that holds `relative_file` (a '/'-separated name below `root`), opened without
// leaving the root: with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) where the kernel has
// it, which follows a symbolic link only while it stays below the root; else component by
// component with O_NOFOLLOW, which follows none. `create`: missing directories are made.
// PermissionDenied when the path leaves the root through a symbolic link (or, without openat2,
// meets one); FailedPrecondition when a component is a file; NotFound when one is missing.
// Every write, rename and delete of the store goes through such a directory, so none of them
// can reach a file outside the root, however the tree below it is linked.
absl::StatusOr<Fd> open_parent_beneath(const std::string& root, std::string_view relative_file,
                                       bool create);
// Whether open_parent_beneath uses openat2 (the kernel has it and it is not disabled).
bool openat2_in_use();
// Tests: false makes the store behave as on a kernel without openat2.
void set_openat2_enabled_for_testing(bool enabled);

// Removes the now-empty directories of `relative_file` below root, deepest first, stopping at
// the first one that is not empty (never outside the root: each is removed through its parent
// opened with open_parent_beneath).
void remove_empty_parents(const std::string& root, std::string_view relative_file);

// Calls visit(name, stat) for every regular file below `root` whose relative name lies in
// [lower, upper) and starts with `prefix`, in byte order of the names, pruning directories
// that cannot hold such names. `lower` may be raised by the callback (to skip a rolled-up
// prefix). Stops when visit returns false. Temporary files of the store are skipped (or, with
// `temporaries`, are the only files visited). Symbolic links are followed only where they
// resolve below the root, and a directory is never entered from inside itself, so links
// cannot lead a walk out of the root or round a loop.
struct WalkBounds {
  std::string prefix;
  std::string lower;  // inclusive
  std::string upper;  // exclusive; empty = none
  bool temporaries = false;
};
absl::Status walk_sorted(const std::string& root, WalkBounds& bounds,
                         const std::function<bool(const std::string&, const struct stat&)>& visit);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_LOCAL_LOCAL_FILES_H_
