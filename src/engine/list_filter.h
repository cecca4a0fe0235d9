// ObjectFilter: which listed objects a listing keeps (ListOptions' filters in one place).
#ifndef DATAFLUX_SRC_ENGINE_LIST_FILTER_H_
#define DATAFLUX_SRC_ENGINE_LIST_FILTER_H_

#include <string>
#include <string_view>
#include <vector>

#include "dataflux/listing.h"
#include "dataflux/object_store.h"

namespace dataflux::internal {

// Matches `name` against a '/'-separated glob: a "**" segment matches any number of
// segments (none included); other segments match one segment as fnmatch(3) does.
bool glob_match(std::string_view pattern, std::string_view name);

class ObjectFilter {
 public:
  ObjectFilter(const ListOptions& options, std::string prefix);
  // `object.name` is the full name (it starts with the prefix).
  bool keep(const ObjectMetadata& object) const;

 private:
  std::string prefix_;
  bool skip_placeholders_;
  std::vector<std::string> temporary_prefixes_;  // empty when not skipping
  std::vector<std::string> temporary_infixes_;   // empty when not skipping
  std::vector<std::string> storage_classes_;
  std::string glob_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_ENGINE_LIST_FILTER_H_
