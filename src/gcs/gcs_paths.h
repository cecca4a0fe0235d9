// URL building for the GCS JSON API: percent-encoding and query strings.
//
// GCS object names may hold any UTF-8, including '/', '?', '#', '%' and spaces, so every bucket
// and object name in a path and every query value is encoded here, in one place.
//
//   std::string url = absl::StrCat(endpoint, "/storage/v1/b/", percent_encode(bucket),
//                                  "/o/", percent_encode(object));
//   QueryString q;
//   q.add("prefix", "a b/");           // "?prefix=a%20b%2F"
//   url += q.str();
#ifndef DATAFLUX_SRC_GCS_GCS_PATHS_H_
#define DATAFLUX_SRC_GCS_GCS_PATHS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "core/percent.h"

namespace dataflux::internal {

// Accumulates "?k=v&k=v", encoding names and values. Empty values are skipped by add_nonempty.
class QueryString {
 public:
  void add(std::string_view name, std::string_view value);
  void add(std::string_view name, std::int64_t value);
  void add_nonempty(std::string_view name, std::string_view value);
  // "" when nothing was added, else "?..." ready to append to a path.
  std::string str() const;

 private:
  std::string query_;
};

// "/storage/v1/b/<bucket>/o/<object>" (object empty: "/storage/v1/b/<bucket>/o").
std::string object_path(std::string_view bucket, std::string_view object);

// "gs://bucket/object" (display_url), for messages; "gs://bucket" for an empty object.
std::string gs_url(std::string_view bucket, std::string_view object);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_GCS_GCS_PATHS_H_
