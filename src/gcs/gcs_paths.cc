#include "gcs/gcs_paths.h"

#include "absl/strings/str_cat.h"
#include "core/absl_view.h"
#include "core/percent.h"

namespace dataflux::internal {

void QueryString::add(std::string_view name, std::string_view value) {
  query_.push_back(query_.empty() ? '?' : '&');
  query_ += percent_encode(name);
  query_.push_back('=');
  query_ += percent_encode(value);
}

void QueryString::add(std::string_view name, std::int64_t value) {
  add(name, std::string_view(std::to_string(value)));
}

void QueryString::add_nonempty(std::string_view name, std::string_view value) {
  if (!value.empty()) add(name, value);
}

std::string QueryString::str() const { return query_; }

std::string object_path(std::string_view bucket, std::string_view object) {
  std::string path = absl::StrCat("/storage/v1/b/", percent_encode(bucket), "/o");
  if (!object.empty()) absl::StrAppend(&path, "/", percent_encode(object));
  return path;
}

std::string gs_url(std::string_view bucket, std::string_view object) {
  return display_url("gs", bucket, object);
}

}  // namespace dataflux::internal
