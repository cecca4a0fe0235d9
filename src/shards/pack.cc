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

namespace {

// The object-name prefix of the shards `dest` names: "shards/train" -> "shards/train-",
// "shards/" -> "shards/".
std::string shard_name_prefix(const std::string& dest_object) {
  if (dest_object.empty() || dest_object.back() == '/') return dest_object;
  return dest_object + "-";
}

bool hidden(std::string_view relative) {
  for (std::size_t start = 0; start < relative.size();) {
    if (relative[start] == '.') return true;
    const std::size_t slash = relative.find('/', start);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return false;
}

}  // namespace

absl::StatusOr<PackResult> pack_objects(const std::string& source, const std::string& dest_prefix,
                                        PackOptions options) {
  auto url = StorageUrl::parse(source);
  if (!url.ok()) return url.status();
  auto dest = StorageUrl::parse(dest_prefix);
  if (!dest.ok()) return dest.status();
  std::string prefix = url->object;
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  if (dest->scheme == url->scheme && dest->bucket == url->bucket &&
      dest->object.compare(0, prefix.size(), prefix) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pack: the shards' prefix ", dest_prefix, " is inside the source ", source,
                     ": a later pack would take the shards for samples; write them elsewhere"));
  }
  std::shared_ptr<ObjectStore> store = options.source_store;
  if (!store) {
    auto opened = open_store(*url, options.store_options);
    if (!opened.ok()) return opened.status();
    store = std::move(*opened);
  }
  std::shared_ptr<ObjectStore> dest_store = options.writer.store;
  if (!dest_store) {
    auto opened = open_store(*dest, options.writer.store_options);
    if (!opened.ok()) return opened.status();
    dest_store = std::move(*opened);
    options.writer.store = dest_store;
  }
  // A pack writes a complete set: shards left from an earlier one would join it silently.
  const std::string shard_prefix = shard_name_prefix(dest->object);
  auto existing = internal::list_dataset_objects(*dest_store, dest->bucket, shard_prefix);
  if (!existing.ok()) {
    return with_context(existing.status(), absl::StrCat("pack: listing ", dest_prefix));
  }
  for (const auto& o : *existing) {
    const std::string_view rest = std::string_view(o.name).substr(shard_prefix.size());
    if (rest.find('/') == std::string_view::npos && internal::shard_compression_from_name(o.name)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "pack: ", dest_store->url(dest->bucket, o.name),
          " exists: the shards' prefix already holds shards, which would mix with the new ones; "
          "remove them (dataflux rm) or choose another prefix"));
    }
  }
  auto listed = internal::list_dataset_objects(*store, url->bucket, prefix);
  if (!listed.ok()) return with_context(listed.status(), absl::StrCat("pack: listing ", source));

  // A sample per key: "cat/1.jpg" and "cat/1.json" are one sample with two fields.
  struct Sample {
    std::vector<std::pair<std::string, ObjectEntry>> fields;  // (field, object)
    int label = -1;
  };
  std::map<std::string, Sample> samples;
  std::map<std::string, int> classes;
  for (auto& o : *listed) {
    std::string_view relative = std::string_view(o.name).substr(prefix.size());
    if (hidden(relative)) continue;  // .DS_Store, .ipynb_checkpoints/ and the like
    auto names = pack_names(relative);
    if (!names) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pack: ", store->url(url->bucket, o.name),
          " has no extension to name its field (\"cat/001.jpg\" becomes field \"jpg\")"));
    }
    auto& [key, field] = *names;
    if (options.labels_from_folders) {
      const std::size_t first_slash = relative.find('/');
      if (first_slash == std::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat(
            "pack: ", store->url(url->bucket, o.name),
            " is not in a class folder (SOURCE/CLASS/NAME.EXT, as ImageFolder lays it out); "
            "pack without labels (labels_from_folders = false, dataflux pack --no-labels)"));
      }
      if (field == "cls") {
        return absl::InvalidArgumentError(
            absl::StrCat("pack: ", store->url(url->bucket, o.name),
                         ": field \"cls\" would clash with the label taken from its folder"));
      }
      classes.emplace(std::string(relative.substr(0, first_slash)), 0);
    }
    Sample& sample = samples[key];
    for (const auto& [other, object] : sample.fields) {
      if (other == field) {
        return absl::InvalidArgumentError(
            absl::StrCat("pack: ", store->url(url->bucket, object.name), " and ",
                         store->url(url->bucket, o.name), " would both be field \"", field,
                         "\" of sample \"", key, "\""));
      }
    }
    sample.fields.emplace_back(std::move(field), std::move(o));
  }
  if (samples.empty()) {
    return absl::NotFoundError(absl::StrCat("pack: no objects under ", source));
  }
  PackResult result;
  int next_label = 0;
  for (auto& [name, label] : classes) {
    label = next_label++;
    result.classes.push_back(name);
  }
  std::vector<std::pair<const std::string*, Sample*>> plan;
  plan.reserve(samples.size());
  std::uint64_t objects_total = 0;
  for (auto& [key, sample] : samples) {
    if (options.labels_from_folders) sample.label = classes.at(key.substr(0, key.find('/')));
    plan.emplace_back(&key, &sample);
    objects_total += sample.fields.size();
  }
  if (options.shuffle) {
    auto order = internal::seeded_permutation(plan.size(), options.seed);
    std::vector<std::pair<const std::string*, Sample*>> shuffled;
    shuffled.reserve(plan.size());
    for (std::size_t i : order) shuffled.push_back(plan[i]);
    plan = std::move(shuffled);
  }

  auto writer = ShardWriter::create(dest_prefix, options.writer);
  if (!writer.ok()) return writer.status();
  FetchOptions fetch;
  fetch.max_bytes_in_flight = options.read_ahead_bytes;
  auto fetcher = std::make_shared<Fetcher>(store, url->bucket, fetch);
  std::vector<ObjectEntry> objects;
  objects.reserve(objects_total);
  for (const auto& [key, sample] : plan) {
    for (const auto& [field, object] : sample->fields) objects.push_back(object);
  }
  PrefetchOptions prefetch;
  prefetch.window_objects = std::max<std::size_t>(1, options.read_ahead_objects);
  prefetch.window_bytes = options.read_ahead_bytes;
  PrefetchStream stream(fetcher, std::move(objects), prefetch);
  auto write_all = [&]() -> absl::Status {
    std::vector<PrefetchStream::Item> held;
    for (const auto& [key, sample] : plan) {
      held.clear();
      std::vector<ShardField> fields;
      for (const auto& [field, object] : sample->fields) {
        auto next = stream.next();
        if (!next.ok()) return with_context(next.status(), "pack");
        if (!next->has_value()) return absl::InternalError("pack: the read-ahead ended early");
        held.push_back(std::move(**next));
        fields.push_back({field, std::string_view(held.back().buffer.data, held.back().size)});
        result.bytes += held.back().size;
      }
      std::string label;
      if (sample->label >= 0) {
        label = std::to_string(sample->label);
        fields.push_back({"cls", label});
      }
      if (absl::Status s = (*writer)->write(*key, fields); !s.ok()) {
        return with_context(s, absl::StrCat("pack: writing sample \"", *key, "\""));
      }
      ++result.samples;
      if (options.progress) options.progress(result.samples, plan.size(), result.bytes);
    }
    auto shards = (*writer)->close();
    if (!shards.ok()) return with_context(shards.status(), "pack: finishing the last shard");
    result.shards = std::move(*shards);
    return absl::OkStatus();
  };
  absl::Status status = write_all();
  if (status.ok()) return result;
  // All or nothing: the shards already published go too (the open one was never published).
  int deleted = 0, left = 0;
  for (const auto& shard : (*writer)->shards()) {
    for (const std::string& u : {shard.url, shard.index_url}) {
      if (u.empty()) continue;
      auto parsed = StorageUrl::parse(u);
      DeleteObjectRequest remove;
      remove.bucket = dest->bucket;
      remove.object = parsed.ok() ? parsed->object : "";
      // Only the version this pack wrote.
      if (u == shard.url && shard.generation != 0) remove.if_generation_match = shard.generation;
      const bool gone = parsed.ok() && dest_store->delete_object(remove).ok();
      if (u == shard.url) (gone ? deleted : left) += 1;
    }
  }
  if (deleted + left == 0) return status;
  return absl::Status(status.code(),
                      absl::StrCat(status.message(), " (", deleted,
                                   " shards written before were "
                                   "deleted",
                                   left > 0 ? absl::StrCat("; ", left, " could not be") : "", ")"));
}

}  // namespace dataflux
