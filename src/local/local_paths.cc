#include "local/local_paths.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/absl_view.h"
#include "dataflux/url.h"

namespace dataflux::internal {

absl::Status check_local_object_name(std::string_view object) {
  if (absl::Status s = validate_object_name(object); !s.ok()) return s;
  absl::string_view name(object.data(), object.size());
  auto fail = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("object name '", name, "' cannot be stored on the local filesystem: ", why));
  };
  if (name.front() == '/') return fail("it is absolute (starts with '/')");
  if (name.back() == '/') return fail("it ends in '/' (a directory placeholder)");
  for (absl::string_view segment : absl::StrSplit(name, '/')) {
    if (segment.empty()) return fail("it has an empty path segment ('//')");
    if (segment == "." || segment == "..") return fail("it has a '.' or '..' segment");
    if (is_local_temp_name(sv(segment))) {
      return fail("segments starting with '.dataflux-' are reserved");
    }
  }
  return absl::OkStatus();
}

bool is_local_temp_name(std::string_view base_name) {
  return absl::StartsWith(av(base_name), ".dataflux-");
}

}  // namespace dataflux::internal
