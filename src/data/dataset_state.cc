#include "data/dataset_state.h"

#include <cstdlib>
#include <numeric>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dataflux/crc32c.h"
#include "dataflux/open_store.h"
#include "engine/dataset_listing.h"

namespace dataflux::internal {

absl::StatusOr<std::shared_ptr<DatasetState>> make_dataset_state(DatasetConfig config) {
  auto url = StorageUrl::parse(config.url);
  if (!url.ok()) return url.status();
  auto state = std::make_shared<DatasetState>();
  state->bucket = url->bucket;
  const std::string prefix = url->object + config.prefix;
  StorageUrl where = *url;
  where.object = prefix;
  state->location = where.to_string();
  if (config.store) {
    state->store = std::move(config.store);
  } else {
    auto store = open_store(*url, config.store_options);
    if (!store.ok()) return store.status();
    state->store = *std::move(store);
  }
  DatasetListingOptions listing;
  listing.workers = config.listing_workers;
  auto objects = list_dataset_objects(*state->store, state->bucket, prefix, listing);
  if (!objects.ok()) {
    return absl::Status(objects.status().code(), absl::StrCat("listing ", state->location, ": ",
                                                              objects.status().message()));
  }
  if (objects->empty()) {
    return absl::NotFoundError(absl::StrCat("no objects under ", state->location,
                                            " (is the prefix right? it must end in '/' to "
                                            "name a directory)"));
  }
  state->objects = *std::move(objects);
  std::uint32_t crc = 0;
  for (const auto& o : state->objects) {
    crc = crc32c_extend(crc, o.name);
    crc = crc32c_extend(crc, &o.size, sizeof(o.size));
  }
  state->fingerprint = (static_cast<std::uint64_t>(state->objects.size()) << 32) | crc;
  state->fetcher = std::make_shared<Fetcher>(state->store, state->bucket, config.fetch);
  return state;
}

namespace {

absl::Status from_env(const char* name, int* value) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return absl::OkStatus();
  if (!absl::SimpleAtoi(text, value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the environment variable ", name, "=\"", text, "\" is not an integer"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status resolve_partition(int* rank, int* world_size) {
  if (*rank < 0) {
    *rank = 0;
    if (auto s = from_env("RANK", rank); !s.ok()) return s;
  }
  if (*world_size < 0) {
    *world_size = 1;
    if (auto s = from_env("WORLD_SIZE", world_size); !s.ok()) return s;
  }
  if (*world_size < 1 || *rank < 0 || *rank >= *world_size) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", *rank, " of world size ", *world_size,
                                                   ": need 0 <= rank < world_size"));
  }
  return absl::OkStatus();
}

std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, std::uint64_t epoch,
                                     bool shuffle, int rank, int world_size) {
  std::vector<std::size_t> all(n);
  std::iota(all.begin(), all.end(), std::size_t{0});
  if (shuffle) {
    // mt19937_64's output is fixed by the standard; the Fisher-Yates below is ours, so the
    // order is the same with every standard library, on every rank.
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + epoch);
    for (std::size_t i = n; i > 1; --i) {
      std::size_t j = static_cast<std::size_t>(rng() % i);
      std::swap(all[i - 1], all[j]);
    }
  }
  std::vector<std::size_t> mine;
  for (std::size_t i = static_cast<std::size_t>(rank); i < n;
       i += static_cast<std::size_t>(world_size)) {
    mine.push_back(all[i]);
  }
  return mine;
}

}  // namespace dataflux::internal
