// Name and path rules of the local store: which object names map to which files, and the
// guarantee that no name, however crafted, reaches outside the root.
#ifndef DATAFLUX_SRC_LOCAL_LOCAL_PATHS_H_
#define DATAFLUX_SRC_LOCAL_LOCAL_PATHS_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace dataflux::internal {

// Files the store writes while an operation is under way start with this; listings skip them.
inline constexpr std::string_view kLocalTempPrefix = ".dataflux-tmp-";
inline constexpr std::string_view kLocalUploadPrefix = ".dataflux-upload-";

// OK when `object` can be stored under a root: a valid object name with no empty, "." or ".."
// segment, not absolute, not ending in '/', and no segment using our temporary prefixes.
absl::Status check_local_object_name(std::string_view object);

// True when a file's base name marks it as the store's own temporary file.
bool is_local_temp_name(std::string_view base_name);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_LOCAL_LOCAL_PATHS_H_
