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
absl::Status fsync_directory(const std::string& dir);

// Creates every missing directory of `relative` (a '/'-separated path) below `root`. Fails
// with FailedPrecondition when a component exists and is not a directory.
absl::Status make_parent_directories(const std::string& root, std::string_view relative_file);
// Removes the now-empty directories of `relative_file` below root, deepest first, stopping at
// the first one that is not empty.
void remove_empty_parents(const std::string& root, std::string_view relative_file);

// Calls visit(name, stat) for every regular file below `root` whose relative name lies in
// [lower, upper) and starts with `prefix`, in byte order of the names, pruning directories
// that cannot hold such names. `lower` may be raised by the callback (to skip a rolled-up
// prefix). Stops when visit returns false. Temporary files of the store are skipped.
struct WalkBounds {
  std::string prefix;
  std::string lower;  // inclusive
  std::string upper;  // exclusive; empty = none
};
absl::Status walk_sorted(const std::string& root, WalkBounds& bounds,
                         const std::function<bool(const std::string&, const struct stat&)>& visit);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_LOCAL_LOCAL_FILES_H_
