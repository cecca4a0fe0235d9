#include "engine/list_filter.h"

#include <fnmatch.h>

#include <algorithm>

namespace dataflux::internal {
namespace {

std::vector<std::string_view> segments(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t slash = s.find('/', begin);
    if (slash == std::string_view::npos) {
      out.push_back(s.substr(begin));
      return out;
    }
    out.push_back(s.substr(begin, slash - begin));
    begin = slash + 1;
  }
}

bool match_segments(const std::vector<std::string>& pattern, std::size_t p,
                    const std::vector<std::string>& name, std::size_t n) {
  if (p == pattern.size()) return n == name.size();
  if (pattern[p] == "**") {
    for (std::size_t k = n; k <= name.size(); ++k) {
      if (match_segments(pattern, p + 1, name, k)) return true;
    }
    return false;
  }
  return n < name.size() && ::fnmatch(pattern[p].c_str(), name[n].c_str(), 0) == 0 &&
         match_segments(pattern, p + 1, name, n + 1);
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view name) {
  // fnmatch wants NUL-terminated strings; names have no NUL (url.h rejects them).
  std::vector<std::string> p, n;
  for (auto s : segments(pattern)) p.emplace_back(s);
  for (auto s : segments(name)) n.emplace_back(s);
  return match_segments(p, 0, n, 0);
}

ObjectFilter::ObjectFilter(const ListOptions& options, std::string prefix)
    : prefix_(std::move(prefix)),
      skip_placeholders_(options.skip_directory_placeholders),
      storage_classes_(options.storage_classes),
      glob_(options.glob) {
  if (options.skip_temporary_objects) {
    for (const auto& t : options.temporary_prefixes) {
      if (!t.empty()) temporary_prefixes_.push_back(t);
    }
    for (const auto& t : options.temporary_infixes) {
      if (!t.empty()) temporary_infixes_.push_back(t);
    }
  }
}

bool ObjectFilter::keep(const ObjectMetadata& object) const {
  const std::string& name = object.name;
  if (skip_placeholders_ && !name.empty() && name.back() == '/') return false;
  for (const auto& t : temporary_prefixes_) {
    if (name.compare(0, t.size(), t) == 0) return false;
    for (std::size_t slash = name.find('/'); slash != std::string::npos;
         slash = name.find('/', slash + 1)) {
      if (name.compare(slash + 1, t.size(), t) == 0) return false;
    }
  }
  for (const auto& t : temporary_infixes_) {
    if (name.find(t) != std::string::npos) return false;
  }
  if (!storage_classes_.empty() && !object.storage_class.empty() &&
      std::find(storage_classes_.begin(), storage_classes_.end(), object.storage_class) ==
          storage_classes_.end()) {
    return false;
  }
  if (!glob_.empty()) {
    std::string_view relative(name);
    if (relative.compare(0, prefix_.size(), prefix_) == 0) relative.remove_prefix(prefix_.size());
    if (!glob_match(glob_, relative)) return false;
  }
  return true;
}

}  // namespace dataflux::internal
