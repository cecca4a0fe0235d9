#include "dataflux/list_prefixes.h"

#include <algorithm>
#include <future>

#include "absl/strings/str_cat.h"

namespace dataflux {
namespace {

absl::StatusOr<std::vector<ObjectMetadata>> list_one(ObjectStore& store, const std::string& bucket,
                                                     const std::string& prefix) {
  std::vector<ObjectMetadata> out;
  ListObjectsRequest request;
  request.bucket = bucket;
  request.prefix = prefix;
  for (;;) {
    auto page = store.list_objects(request);
    if (!page.ok()) return page.status();
    for (auto& o : page->objects) out.push_back(std::move(o));
    if (page->next_page_token.empty()) return out;
    request.page_token = std::move(page->next_page_token);
  }
}

}  // namespace

absl::StatusOr<std::vector<ObjectMetadata>> list_prefixes(ObjectStore& store,
                                                          const std::string& bucket,
                                                          std::vector<std::string> prefixes) {
  // Sorted, a prefix that starts with a kept one is already covered by it.
  std::sort(prefixes.begin(), prefixes.end());
  std::vector<std::string> kept;
  for (auto& p : prefixes) {
    if (!kept.empty() && p.compare(0, kept.back().size(), kept.back()) == 0) continue;
    kept.push_back(std::move(p));
  }
  std::vector<std::future<absl::StatusOr<std::vector<ObjectMetadata>>>> lists;
  for (const auto& p : kept) {
    lists.push_back(std::async(std::launch::async,
                               [&store, &bucket, p] { return list_one(store, bucket, p); }));
  }
  std::vector<ObjectMetadata> out;
  absl::Status first_error;
  for (std::size_t i = 0; i < lists.size(); ++i) {
    auto objects = lists[i].get();
    if (!objects.ok()) {
      if (first_error.ok()) {
        first_error = absl::Status(objects.status().code(),
                                   absl::StrCat("listing prefix \"", kept[i], "\" of ", bucket,
                                                ": ", objects.status().message()));
      }
      continue;
    }
    for (auto& o : *objects) out.push_back(std::move(o));
  }
  if (!first_error.ok()) return first_error;
  // Prefixes do not overlap after the pruning above and each listing is sorted, so a sort of
  // the concatenation is just a merge; it also keeps the contract's byte order.
  std::sort(out.begin(), out.end(),
            [](const ObjectMetadata& a, const ObjectMetadata& b) { return a.name < b.name; });
  return out;
}

}  // namespace dataflux
