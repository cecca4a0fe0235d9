// The one streaming pipeline of the record datasets (tar shards, line files): sources (shards,
// text objects) read ahead in this rank's epoch order within a byte budget, each parsed into
// its records, the records mixed through a ShuffleBuffer, and an exact resume.
//
// Exact resume without re-reading what was consumed: the buffer works on record ids
// (source, record), so its output is a function of the seed and of how many records each
// source holds. A stream restarted at position P with the counts of the sources read so far
// replays the buffer on ids alone, then reads only the sources that still hold a record in the
// buffer, and the sources after them.
//
//   MixedRecordStream<Line> stream(fetcher, sources, options, parse, counts, position);
//   while (auto record = stream.next()) ...   // StatusOr<optional<R>>; counts() for save()
#ifndef DATAFLUX_SRC_SHARDS_RECORD_STREAM_H_
#define DATAFLUX_SRC_SHARDS_RECORD_STREAM_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "dataflux/fetch.h"
#include "shards/order.h"

namespace dataflux::internal {

struct RecordStreamOptions {
  std::size_t shuffle_buffer = 0;  // records; 0 = the sources' own order
  std::uint64_t seed = 0;          // of the buffer: mix_seed(seed, epoch, rank)
  PrefetchOptions prefetch;        // sources read ahead
  FetchAllocator allocate;         // where a source's bytes land; nullptr = heap
  std::string location;            // for messages
};

template <typename R>
class MixedRecordStream {
 public:
  // Turns the bytes of sources[source] into its records, in order.
  using Parse = std::function<absl::Status(std::size_t source, const ObjectEntry& object,
                                           const FetchBuffer& bytes, std::uint64_t size,
                                           std::vector<R>* records)>;

  // `sources`: this rank's sources in this epoch's order. `counts`: records per source for a
  // prefix of `sources`, as counts() returned them. `position`: records already handed out.
  MixedRecordStream(std::shared_ptr<Fetcher> fetcher, std::vector<ObjectEntry> sources,
                    RecordStreamOptions options, Parse parse, std::vector<std::uint64_t> counts,
                    std::uint64_t position)
      : fetcher_(std::move(fetcher)),
        sources_(std::move(sources)),
        options_(std::move(options)),
        parse_(std::move(parse)),
        counts_(std::move(counts)),
        mixer_(options_.shuffle_buffer, options_.seed),
        skip_(position) {}

  MixedRecordStream(const MixedRecordStream&) = delete;
  MixedRecordStream& operator=(const MixedRecordStream&) = delete;

  // The next record; nullopt after the last. After an error the stream is spent: make a new
  // one from counts() and the position to retry.
  absl::StatusOr<std::optional<R>> next() {
    if (!failed_.ok()) return failed_;
    if (!started_) {
      started_ = true;
      if (absl::Status s = replay(); !s.ok()) return failed_ = s;
    }
    while (true) {
      if (current_ < records_.size()) {
        const std::uint64_t id = make_id(source_, current_);
        R& record = records_[current_++];
        if (awaited_.erase(id) > 0) {
          payload_.emplace(id, std::move(record));
        } else if (!before_push_point(source_, current_ - 1)) {
          push_src_ = source_;
          push_rec_ = current_;
          payload_.emplace(id, std::move(record));
          if (auto out = mixer_.push(id)) return take(*out);
        }
        continue;
      }
      if (loaded_ && source_ >= push_src_) {
        push_src_ = source_ + 1;
        push_rec_ = 0;
      }
      records_.clear();
      current_ = 0;
      loaded_ = false;
      if (plan_position_ < plan_.size()) {
        if (absl::Status s = load(plan_[plan_position_++]); !s.ok()) return failed_ = s;
        continue;
      }
      if (!awaited_.empty()) {
        return failed_ = absl::InternalError(absl::StrCat(options_.location, ": resume lost ",
                                                          awaited_.size(), " buffered records"));
      }
      if (auto out = mixer_.drain()) return take(*out);
      return std::optional<R>();
    }
  }

  // Records per source for the prefix of sources whose count is known.
  const std::vector<std::uint64_t>& counts() const { return counts_; }

 private:
  static std::uint64_t make_id(std::size_t source, std::size_t record) {
    return (static_cast<std::uint64_t>(source) << 32) | static_cast<std::uint64_t>(record);
  }
  bool before_push_point(std::size_t source, std::size_t record) const {
    return source < push_src_ || (source == push_src_ && record < push_rec_);
  }

  absl::StatusOr<std::optional<R>> take(std::uint64_t id) {
    auto it = payload_.find(id);
    if (it == payload_.end()) {
      return failed_ = absl::InternalError(
                 absl::StrCat(options_.location, ": record ", id >> 32, "/", id & 0xffffffffu,
                              " left the shuffle buffer before it was read"));
    }
    std::optional<R> out(std::move(it->second));
    payload_.erase(it);
    return out;
  }

  // Counts the records of `source` by reading it (a resume whose state lacks them).
  absl::Status count(std::size_t source) {
    const ObjectEntry& object = sources_[source];
    FetchBuffer buffer = allocate(object.size);
    FetchTarget target{object, buffer.data, {}};
    if (absl::Status s = fetcher_->fetch({target}); !s.ok()) return s;
    std::vector<R> records;
    if (absl::Status s = parse_(source, object, buffer, object.size, &records); !s.ok()) return s;
    counts_.push_back(records.size());
    return absl::OkStatus();
  }

  FetchBuffer allocate(std::uint64_t size) const {
    if (options_.allocate) return options_.allocate(size);
    auto bytes = std::shared_ptr<char[]>(new char[std::max<std::uint64_t>(size, 1)]);
    return FetchBuffer{bytes.get(), bytes};
  }

  // Replays the buffer on ids up to the position, then plans which sources to read.
  absl::Status replay() {
    std::uint64_t out = 0;
    std::size_t src = 0, rec = 0;
    auto skip_empty = [&]() -> absl::Status {
      while (src < sources_.size()) {
        if (src >= counts_.size()) {
          if (absl::Status s = count(src); !s.ok()) return s;
        }
        if (rec < counts_[src]) break;
        ++src;
        rec = 0;
      }
      return absl::OkStatus();
    };
    while (out < skip_) {
      if (absl::Status s = skip_empty(); !s.ok()) return s;
      if (src < sources_.size()) {
        if (mixer_.push(make_id(src, rec++))) ++out;
      } else if (mixer_.drain()) {
        ++out;
      } else {
        break;  // the position is past the end: nothing is left
      }
    }
    push_src_ = src;
    push_rec_ = rec;
    std::vector<std::size_t> plan;
    for (std::uint64_t id : mixer_.held()) {
      awaited_.insert(id);
      plan.push_back(static_cast<std::size_t>(id >> 32));
    }
    for (std::size_t s = src; s < sources_.size(); ++s) plan.push_back(s);
    std::sort(plan.begin(), plan.end());
    plan.erase(std::unique(plan.begin(), plan.end()), plan.end());
    plan_ = plan;
    std::vector<ObjectEntry> objects;
    objects.reserve(plan.size());
    for (std::size_t s : plan) objects.push_back(sources_[s]);
    stream_ = std::make_unique<PrefetchStream>(fetcher_, std::move(objects), options_.prefetch,
                                               options_.allocate);
    return absl::OkStatus();
  }

  absl::Status load(std::size_t source) {
    auto item = stream_->next();
    if (!item.ok()) return item.status();
    if (!item->has_value()) {
      return absl::InternalError(absl::StrCat(options_.location, ": the read-ahead of ",
                                              sources_[source].name, " ended early"));
    }
    const ObjectEntry& object = sources_[source];
    if (absl::Status s = parse_(source, object, (*item)->buffer, (*item)->size, &records_);
        !s.ok()) {
      return s;
    }
    if (source < counts_.size()) {
      if (counts_[source] != records_.size()) {
        return absl::FailedPreconditionError(absl::StrCat(
            options_.location, ": ", object.name, " holds ", records_.size(), " records but held ",
            counts_[source], " when the position was saved; it changed since"));
      }
    } else if (source == counts_.size()) {
      counts_.push_back(records_.size());
    } else {
      return absl::InternalError(absl::StrCat(options_.location, ": sources read out of order"));
    }
    source_ = source;
    current_ = 0;
    loaded_ = true;
    return absl::OkStatus();
  }

  std::shared_ptr<Fetcher> fetcher_;
  std::vector<ObjectEntry> sources_;
  RecordStreamOptions options_;
  Parse parse_;
  std::vector<std::uint64_t> counts_;
  ShuffleBuffer<std::uint64_t> mixer_;
  std::uint64_t skip_;

  bool started_ = false;
  absl::Status failed_;
  std::vector<std::size_t> plan_;  // the sources to read, in order
  std::size_t plan_position_ = 0;
  std::unique_ptr<PrefetchStream> stream_;
  // The first record not yet pushed into the buffer.
  std::size_t push_src_ = 0, push_rec_ = 0;
  std::unordered_set<std::uint64_t> awaited_;     // held ids whose record is not read yet
  std::unordered_map<std::uint64_t, R> payload_;  // held ids' records
  // The source being consumed.
  std::size_t source_ = 0;
  std::vector<R> records_;
  std::size_t current_ = 0;
  bool loaded_ = false;
};

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_SHARDS_RECORD_STREAM_H_
