// list_objects_fast: the work-stealing parallel lister (see dataflux/listing.h).
//
// Ranges are prefix-relative [start, end) with end "" = unbounded. Every range handed out is
// counted in `outstanding_` until the worker that took it has listed it to the end, so the
// listing ends exactly when that count reaches zero: no polling, no "everyone looks idle"
// guess (the Python lister's termination race). Each range becomes one Chunk; chunks are
// disjoint, so sorting them by their start and concatenating gives sorted output with no
// global sort.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "core/http_status.h"
#include "core/thread_pool.h"
#include "dataflux/listing.h"
#include "engine/list_filter.h"
#include "engine/range_splitter.h"

namespace dataflux {
namespace internal {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A donor hands at most this many ranges over at one page boundary.
constexpr int kMaxSplitsPerPage = 32;
// Density-based cuts aim at this many pages per handed-over range: enough that a worker is
// busy for a few round trips, few enough that the work spreads in a few rounds.
constexpr int kPagesPerCut = 3;

struct Range {
  std::string start;  // prefix-relative, inclusive
  std::string end;    // prefix-relative, exclusive; "" = unbounded
  // Full names <= this were listed already (the page a range was split on ends here).
  std::string listed_through;
  std::string page_token;  // continue here (only while the range has not been cut)
};

struct Chunk {
  std::string start;  // the range's start when it was handed out: chunks sort by it
  Listing objects;
};

class ListJob {
 public:
  ListJob(ObjectStore& store, std::string bucket, std::string prefix, const ListOptions& options)
      : store_(store),
        bucket_(std::move(bucket)),
        prefix_(std::move(prefix)),
        options_(options),
        filter_(options, prefix_),
        server_end_offset_(store.capabilities().server_end_offset),
        started_(SteadyClock::now()) {}

  absl::StatusOr<Listing> run() {
    if (options_.workers < 1 || options_.page_size < 1) {
      return absl::InvalidArgumentError(absl::StrCat("list ", where(), ": workers (",
                                                     options_.workers, ") and page_size (",
                                                     options_.page_size, ") must be at least 1"));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      outstanding_ = 1;
    }
    // The calling thread lists first, alone; workers start at its first full page.
    workers_started_ = 1;
    Chunk first;
    Range whole;
    absl::Status s = list_range(whole, &first.objects);
    finish_range(std::move(first), s);
    work();
    workers_.wait();  // any worker not started yet finds nothing left and returns
    if (!error_.ok()) {
      return annotate(error_, absl::StrCat("list ", where()));
    }
    std::sort(chunks_.begin(), chunks_.end(),
              [](const Chunk& a, const Chunk& b) { return a.start < b.start; });
    std::size_t objects = 0, name_bytes = 0;
    for (const auto& c : chunks_) {
      objects += c.objects.size();
      for (std::size_t i = 0; i < c.objects.size(); ++i) name_bytes += c.objects.name(i).size();
    }
    Listing out(store_.url(bucket_, ""), prefix_);
    out.reserve(objects, name_bytes);
    for (auto& c : chunks_) {
      out.append(c.objects);
      c.objects = Listing();  // free as we go: the peak stays near one copy
    }
    return out;
  }

  ListStats stats() const {
    ListStats s;
    s.objects = objects_.load();
    s.objects_seen = objects_seen_.load();
    s.pages = pages_.load();
    s.requests = requests_.load();
    s.splits = splits_.load();
    s.workers = workers_started_.load();
    s.elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - started_);
    return s;
  }

 private:
  std::string where() const { return absl::StrCat(store_.url(bucket_, ""), "/", prefix_); }

  // Takes ranges until none is outstanding (or one failed).
  void work() {
    Range range;
    while (next_range(&range)) {
      Chunk chunk;
      chunk.start = range.start;
      absl::Status s = list_range(range, &chunk.objects);
      finish_range(std::move(chunk), s);
    }
  }

  bool next_range(Range* range) {
    std::unique_lock<std::mutex> lock(mu_);
    ++idle_;
    update_hunger();
    wake_.wait(lock, [&] { return !pending_.empty() || outstanding_ == 0 || failed_.load(); });
    --idle_;
    if (failed_.load() || pending_.empty()) {
      update_hunger();
      return false;
    }
    *range = std::move(pending_.front());
    pending_.pop_front();
    update_hunger();
    return true;
  }

  void finish_range(Chunk chunk, const absl::Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status.ok() && error_.ok()) {
      error_ = status;
      failed_.store(true);
    }
    if (!chunk.objects.empty()) {
      chunk.objects.shrink_to_fit();
      chunks_.push_back(std::move(chunk));
    }
    if (--outstanding_ == 0 || failed_.load()) wake_.notify_all();
  }

  // Idle workers not yet served by a pending range. Read without the lock at page
  // boundaries; donate() rechecks under it.
  void update_hunger() { hunger_.store(idle_ - static_cast<int>(pending_.size())); }

  // Cuts the rest of `range` (after `last`; the page listed [first, last], full names) for idle
  // workers: keeps the lowest piece, queues the others. Returns false when nothing was handed over.
  bool donate(Range* range, const std::string& first, const std::string& last) {
    std::lock_guard<std::mutex> lock(mu_);
    const int hungry = std::min(idle_ - static_cast<int>(pending_.size()), kMaxSplitsPerPage);
    if (hungry <= 0 || failed_.load()) return false;
    const std::string from = last.substr(prefix_.size());
    // Density cuts from the page just listed (see RangeSplitter::extrapolate); where they do
    // not apply, the reference splitter's midpoints.
    std::vector<std::string> cuts =
        splitter_.extrapolate(first.substr(prefix_.size()), from, range->end, hungry, kPagesPerCut);
    if (cuts.empty()) cuts = splitter_.split_range(from, range->end, hungry);
    if (cuts.empty()) return false;
    for (std::size_t i = 0; i < cuts.size(); ++i) {
      Range r;
      r.start = cuts[i];
      r.end = i + 1 < cuts.size() ? cuts[i + 1] : range->end;
      pending_.push_back(std::move(r));
    }
    outstanding_ += static_cast<int>(cuts.size());
    splits_ += cuts.size();
    update_hunger();
    wake_.notify_all();
    // Continue from the last listed name (inclusive, then skipped) up to the first cut.
    range->end = cuts.front();
    range->start = from;
    range->listed_through = last;
    range->page_token.clear();
    return true;
  }

  // The calling thread's first full page: start the workers, counted as idle already so the
  // first split feeds them all at once.
  void start_workers() {
    const int extra = options_.workers - 1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      idle_ += extra;
      update_hunger();
    }
    workers_started_ = options_.workers;
    for (int i = 0; i < extra; ++i) {
      workers_.run([this] {
        {
          std::lock_guard<std::mutex> lock(mu_);
          --idle_;  // next_range() counts this worker again
        }
        work();
      });
    }
  }

  // The store retries each page under its own RetryOptions: the one retry layer.
  absl::StatusOr<ListObjectsPage> list_page(const ListObjectsRequest& request) {
    ++requests_;
    return store_.list_objects(request);
  }

  absl::Status list_range(Range range, Listing* out) {
    ListObjectsRequest request;
    request.bucket = bucket_;
    request.prefix = prefix_;
    request.max_results = options_.page_size;
    request.lean = true;  // a Listing keeps nothing more
    std::string last = range.listed_through;
    for (;;) {
      if (failed_.load()) return absl::OkStatus();  // another range failed: stop early
      request.start_offset = prefix_ + range.start;
      request.end_offset =
          server_end_offset_ && !range.end.empty() ? prefix_ + range.end : std::string();
      request.page_token = range.page_token;
      auto page = list_page(request);
      if (!page.ok()) return page.status();
      ++pages_;
      const std::string end = range.end.empty() ? std::string() : prefix_ + range.end;
      bool past_end = false;
      std::string first;
      std::uint64_t kept = 0, seen = 0;
      for (const ObjectMetadata& object : page->objects) {
        if (!range.listed_through.empty() && object.name <= range.listed_through) continue;
        if (!end.empty() && object.name >= end) {  // stores without a server end offset
          past_end = true;
          break;
        }
        ++seen;
        if (first.empty()) first = object.name;
        last = object.name;
        if (!filter_.keep(object)) continue;
        out->add(object.name, object.size, object.generation, object.crc32c);
        ++kept;
      }
      objects_ += kept;
      objects_seen_ += seen;
      report_progress();
      if (past_end || page->next_page_token.empty()) return absl::OkStatus();
      range.page_token = std::move(page->next_page_token);
      if (workers_started_ == 1 && options_.workers > 1) start_workers();
      if (hunger_.load() > 0 && !last.empty()) donate(&range, first, last);
    }
  }

  void report_progress() {
    if (!options_.progress) return;
    // Snapshot under the lock, so callbacks see counters that never go backwards.
    std::lock_guard<std::mutex> lock(progress_mu_);
    options_.progress(stats());
  }

  ObjectStore& store_;
  const std::string bucket_;
  const std::string prefix_;
  const ListOptions& options_;
  const ObjectFilter filter_;
  const bool server_end_offset_;
  const SteadyClock::time_point started_;
  const RangeSplitter splitter_;

  // std::mutex, not absl::Mutex: Debian's Abseil is not TSan-instrumented.
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Range> pending_;  // guarded by mu_
  int idle_ = 0;               // guarded by mu_: workers waiting for a range
  int outstanding_ = 0;        // guarded by mu_: ranges pending or being listed
  absl::Status error_;         // guarded by mu_: the first failure
  std::vector<Chunk> chunks_;  // guarded by mu_
  std::atomic<int> hunger_{0};
  std::atomic<bool> failed_{false};
  std::atomic<int> workers_started_{0};  // 1 until the calling thread starts the workers

  std::atomic<std::uint64_t> objects_{0}, objects_seen_{0}, pages_{0}, requests_{0}, splits_{0};
  std::mutex progress_mu_;
  // Last: destroyed (waited for) first. At most workers - 1 on the pool; the caller is one.
  TaskGroup workers_{ThreadPool::blocking(), options_.workers - 1};
};

}  // namespace
}  // namespace internal

absl::StatusOr<Listing> list_objects_fast(ObjectStore& store, const std::string& bucket,
                                          const std::string& prefix, const ListOptions& options,
                                          ListStats* stats) {
  internal::ListJob job(store, bucket, prefix, options);
  auto listing = job.run();
  if (stats) *stats = job.stats();
  return listing;
}

}  // namespace dataflux
