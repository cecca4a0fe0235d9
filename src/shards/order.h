// The orders every streaming dataset shares, as pure functions of (seed, epoch, rank): the
// epoch's permutation, each rank's share, and a shuffle buffer whose output depends only on
// its seed and its input. Torch-free.
#ifndef DATAFLUX_SRC_SHARDS_ORDER_H_
#define DATAFLUX_SRC_SHARDS_ORDER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace dataflux::internal {

// `rank`/`world_size` of -1 come from $RANK/$WORLD_SIZE, else 0/1; InvalidArgument unless
// 0 <= rank < world_size.
absl::Status resolve_partition(int* rank, int* world_size);

// A permutation of [0, n) fixed by `seed` alone, the same with every standard library.
std::vector<std::size_t> seeded_permutation(std::size_t n, std::uint64_t seed);

// The order of epoch `epoch` for `rank` of `world_size`: a permutation of [0, n) (the
// identity unless `shuffle`), fixed by (seed, epoch) alone, of which the rank takes positions
// rank, rank + world_size, ... Ranks are disjoint and together cover [0, n).
std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, std::uint64_t epoch,
                                     bool shuffle, int rank, int world_size);

// The seed of the shuffle buffer of (seed, epoch, rank): distinct per rank and epoch.
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t epoch, int rank);

// WebDataset's shuffle buffer, made reproducible: items wait until `capacity` are held, then
// each new item makes one held item (chosen by a generator seeded with `seed`; the new item
// may be chosen) come out. What comes out, and when, is a function of the seed and the input
// sequence only, so replaying the input replays the output exactly (how streams resume).
// Capacity 0 passes items straight through.
template <typename T>
class ShuffleBuffer {
 public:
  ShuffleBuffer(std::size_t capacity, std::uint64_t seed) : capacity_(capacity), rng_(seed) {}

  std::optional<T> push(T item) {
    held_.push_back(std::move(item));
    if (held_.size() <= capacity_) return std::nullopt;
    return take();
  }
  // After the input ended: the held items, one at a time, in random order.
  std::optional<T> drain() {
    if (held_.empty()) return std::nullopt;
    return take();
  }
  const std::vector<T>& held() const { return held_; }

 private:
  T take() {
    const std::size_t k = static_cast<std::size_t>(rng_() % held_.size());
    std::swap(held_[k], held_.back());
    T out = std::move(held_.back());
    held_.pop_back();
    return out;
  }

  std::size_t capacity_;
  std::mt19937_64 rng_;
  std::vector<T> held_;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_SHARDS_ORDER_H_
