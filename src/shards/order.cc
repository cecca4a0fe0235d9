#include "shards/order.h"

#include <cstdlib>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace dataflux::internal {

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

std::vector<std::size_t> seeded_permutation(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> all(n);
  std::iota(all.begin(), all.end(), std::size_t{0});
  // mt19937_64's output is fixed by the standard; the Fisher-Yates below is ours, so the
  // order is the same with every standard library, on every rank.
  std::mt19937_64 rng(seed);
  for (std::size_t i = n; i > 1; --i) {
    std::size_t j = static_cast<std::size_t>(rng() % i);
    std::swap(all[i - 1], all[j]);
  }
  return all;
}

std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, std::uint64_t epoch,
                                     bool shuffle, int rank, int world_size) {
  std::vector<std::size_t> all;
  if (shuffle) {
    all = seeded_permutation(n, seed * 0x9E3779B97F4A7C15ull + epoch);
  } else {
    all.resize(n);
    std::iota(all.begin(), all.end(), std::size_t{0});
  }
  std::vector<std::size_t> mine;
  for (std::size_t i = static_cast<std::size_t>(rank); i < n;
       i += static_cast<std::size_t>(world_size)) {
    mine.push_back(all[i]);
  }
  return mine;
}

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t epoch, int rank) {
  // splitmix64 of the three, so neighbouring epochs and ranks get unrelated generators.
  std::uint64_t z = seed ^ (epoch * 0x9E3779B97F4A7C15ull) ^
                    (static_cast<std::uint64_t>(rank) * 0xD1B54A32D192ED03ull) ^ 0x6D697873ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace dataflux::internal
