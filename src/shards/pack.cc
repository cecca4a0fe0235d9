// Finding shards (list_shards) and filling them from a tree of objects (pack_objects).
#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/absl_view.h"
#include "dataflux/shards.h"
#include "dataflux/url.h"
#include "engine/dataset_listing.h"
#include "shards/listing.h"
#include "shards/order.h"
#include "shards/tar_io.h"

namespace dataflux {
namespace {

absl::Status with_context(const absl::Status& s, std::string_view context) {
  return absl::Status(s.code(), absl::StrCat(internal::av(context), ": ", s.message()));
}

// "cat/img.v2.JPG" -> key "cat/img_v2", field "jpg": the extension is what follows the last
// dot, and the dots before it become '_' so that readers, which split at the first dot, get the
// same key back.
std::optional<std::pair<std::string, std::string>> pack_names(std::string_view relative) {
  const std::size_t slash = relative.rfind('/');
  const std::size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  const std::size_t dot = relative.rfind('.');
  if (dot == std::string_view::npos || dot <= base || dot + 1 == relative.size()) {
    return std::nullopt;
  }
  std::string key(relative.substr(0, dot));
  std::replace(key.begin() + static_cast<std::ptrdiff_t>(base), key.end(), '.', '_');
  std::string field(relative.substr(dot + 1));
  for (char& c : field) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::make_pair(std::move(key), std::move(field));
}

}  // namespace

namespace internal {

absl::StatusOr<ShardListing> list_under(const std::vector<std::string>& urls,
                                        std::shared_ptr<ObjectStore> store,
                                        const StoreOptions& store_options, int listing_workers,
                                        bool shards_only) {
  if (urls.empty()) return absl::InvalidArgumentError("listing: no URL given");
  ShardListing listing;
  listing.location = urls.size() == 1
                         ? urls.front()
                         : absl::StrCat(urls.front(), " (and ", urls.size() - 1, " more)");
  std::optional<StorageUrl> first;
  std::map<std::string, ObjectEntry> found;
  std::map<std::string, ObjectEntry> indexes;  // by the name of the shard they describe
  for (const auto& text : urls) {
    auto url = StorageUrl::parse(text);
    if (!url.ok()) return url.status();
    if (!first) {
      first = *url;
      listing.bucket = url->bucket;
      if (store) {
        listing.store = store;
      } else {
        auto opened = open_store(*url, store_options);
        if (!opened.ok()) return opened.status();
        listing.store = std::move(*opened);
      }
    } else if (url->scheme != first->scheme || url->bucket != first->bucket) {
      return absl::InvalidArgumentError(
          absl::StrCat("listing: ", text, " is not in the bucket of ", first->to_string(),
                       "; every prefix of one dataset must be in one bucket"));
    }
    DatasetListingOptions options;
    options.workers = listing_workers;
    auto objects = list_dataset_objects(*listing.store, url->bucket, url->object, options);
    if (!objects.ok()) return with_context(objects.status(), absl::StrCat("listing ", text));
    constexpr std::string_view kIndex = ".index.json";
    for (auto& o : *objects) {
      const std::string_view name = o.name;
      if (shards_only && name.size() > kIndex.size() &&
          name.substr(name.size() - kIndex.size()) == kIndex) {
        std::string shard(name.substr(0, name.size() - kIndex.size()));
        indexes.emplace(std::move(shard), o);
        continue;
      }
      if (shards_only && !shard_compression_from_name(o.name)) continue;
      std::string key = o.name;
      found.emplace(std::move(key), std::move(o));
    }
  }
  if (found.empty()) {
    return absl::NotFoundError(absl::StrCat(
        shards_only ? "no shards (.tar, .tar.gz, .tgz, .tar.zst) under " : "no objects under ",
        absl::StrJoin(urls, ", "), " (a prefix must end in '/' to name a directory)"));
  }
  listing.shards.reserve(found.size());
  for (auto& [name, entry] : found) {
    auto index = indexes.find(name);
    listing.indexes.push_back(index == indexes.end() ? std::nullopt
                                                     : std::optional<ObjectEntry>(index->second));
    listing.shards.push_back(std::move(entry));
  }
  return listing;
}

}  // namespace internal

absl::StatusOr<ShardListing> list_shards(const std::vector<std::string>& urls,
                                         std::shared_ptr<ObjectStore> store,
                                         const StoreOptions& store_options, int listing_workers) {
  return internal::list_under(urls, std::move(store), store_options, listing_workers, true);
}

absl::StatusOr<PackResult> pack_objects(const std::string& source, const std::string& dest_prefix,
                                        PackOptions options) {
  auto url = StorageUrl::parse(source);
  if (!url.ok()) return url.status();
  std::string prefix = url->object;
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  std::shared_ptr<ObjectStore> store = options.source_store;
  if (!store) {
    auto opened = open_store(*url, options.store_options);
    if (!opened.ok()) return opened.status();
    store = std::move(*opened);
  }
  auto listed = internal::list_dataset_objects(*store, url->bucket, prefix);
  if (!listed.ok()) return with_context(listed.status(), absl::StrCat("pack: listing ", source));

  struct Item {
    ObjectEntry object;
    std::string key, field;
    int label = -1;
  };
  std::vector<Item> items;
  std::map<std::string, int> classes;
  for (auto& o : *listed) {
    std::string_view relative = std::string_view(o.name).substr(prefix.size());
    const std::size_t slash = relative.rfind('/');
    std::string_view base = slash == std::string_view::npos ? relative : relative.substr(slash + 1);
    if (!base.empty() && base.front() == '.') continue;  // .DS_Store and the like
    auto names = pack_names(relative);
    if (!names) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pack: ", store->url(url->bucket, o.name),
          " has no extension to name its field (\"cat/001.jpg\" becomes field \"jpg\")"));
    }
    Item item{std::move(o), std::move(names->first), std::move(names->second), -1};
    if (options.labels_from_folders) {
      const std::size_t first_slash = relative.find('/');
      if (first_slash == std::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat(
            "pack: ", store->url(url->bucket, item.object.name),
            " is not in a class folder (SOURCE/CLASS/NAME.EXT, as ImageFolder lays it out); "
            "turn labels_from_folders off to pack without labels"));
      }
      classes.emplace(std::string(relative.substr(0, first_slash)), 0);
    }
    items.push_back(std::move(item));
  }
  if (items.empty()) {
    return absl::NotFoundError(absl::StrCat("pack: no objects under ", source));
  }
  PackResult result;
  int next_label = 0;
  for (auto& [name, label] : classes) {
    label = next_label++;
    result.classes.push_back(name);
  }
  if (options.labels_from_folders) {
    for (auto& item : items) {
      item.label = classes.at(item.key.substr(0, item.key.find('/')));
    }
  }
  std::vector<std::size_t> order;
  if (options.shuffle) {
    order = internal::seeded_permutation(items.size(), options.seed);
  } else {
    order.resize(items.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  }

  auto writer = ShardWriter::create(dest_prefix, options.writer);
  if (!writer.ok()) return writer.status();
  FetchOptions fetch;
  fetch.max_bytes_in_flight = options.read_ahead_bytes;
  auto fetcher = std::make_shared<Fetcher>(store, url->bucket, fetch);
  std::vector<ObjectEntry> objects;
  objects.reserve(order.size());
  for (std::size_t i : order) objects.push_back(items[i].object);
  PrefetchOptions prefetch;
  prefetch.window_objects = std::max<std::size_t>(1, options.read_ahead_objects);
  prefetch.window_bytes = options.read_ahead_bytes;
  PrefetchStream stream(fetcher, std::move(objects), prefetch);
  for (std::size_t k = 0; k < order.size(); ++k) {
    auto next = stream.next();
    if (!next.ok()) return with_context(next.status(), "pack");
    if (!next->has_value()) return absl::InternalError("pack: the read-ahead ended early");
    const Item& item = items[order[k]];
    std::vector<ShardField> fields;
    fields.push_back({item.field, std::string_view((*next)->buffer.data, (*next)->size)});
    std::string label;
    if (item.label >= 0) {
      if (item.field == "cls") {
        return absl::InvalidArgumentError(
            absl::StrCat("pack: ", store->url(url->bucket, item.object.name),
                         ": field \"cls\" would clash with the label taken from its folder"));
      }
      label = std::to_string(item.label);
      fields.push_back({"cls", label});
    }
    if (absl::Status s = (*writer)->write(item.key, fields); !s.ok()) return s;
    ++result.samples;
    result.bytes += (*next)->size;
    if (options.progress) options.progress(result.samples, items.size(), result.bytes);
  }
  auto shards = (*writer)->close();
  if (!shards.ok()) return shards.status();
  result.shards = std::move(*shards);
  return result;
}

}  // namespace dataflux
