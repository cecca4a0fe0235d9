// perfdiag: measures a bucket as gsutil perfdiag does (latency of each small operation,
// single-stream and parallel throughput up and down, small objects at several concurrencies,
// listing rate) on a scratch prefix it always deletes, and prints the DatasetOptions and
// CheckpointOptions that suit it.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <mutex>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "dataflux/fetch.h"
#include "dataflux/listing.h"
#include "dataflux/upload.h"
#include "engine/ranged_read.h"
#include "engine/upload_parts.h"

namespace dataflux::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string random_payload(std::uint64_t size, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(size, '\0');
  for (std::size_t i = 0; i + 8 <= out.size(); i += 8) {
    const std::uint64_t word = rng();
    std::memcpy(&out[i], &word, 8);
  }
  return out;
}

class Perfdiag {
 public:
  Perfdiag(const Location& location, const PerfdiagOptions& options, const Io& io)
      : location_(location),
        options_(options),
        io_(io),
        bucket_(location.url.bucket),
        scratch_(absl::StrCat(location.url.object.empty() || location.url.object.back() == '/'
                                  ? location.url.object
                                  : location.url.object + "/",
                              "dataflux-perfdiag-", internal::new_upload_id(), "/")) {}

  // Deletes whatever the run wrote, whatever happened.
  ~Perfdiag() {
    ListOptions list;
    list.skip_temporary_objects = false;
    auto listing = list_objects_fast(*location_.store, bucket_, scratch_, list);
    if (!listing.ok()) return;
    parallel_for(listing->size(), 32, [&](std::size_t i) {
      DeleteObjectRequest request;
      request.bucket = bucket_;
      request.object = std::string(listing->name(i));
      (void)location_.store->delete_object(request);
    });
  }

  absl::Status run() {
    std::fprintf(io_.out, "perfdiag %s (scratch prefix %s, deleted at the end)\n",
                 location_.url.to_string().c_str(), location_.url_of(scratch_).c_str());
    if (auto s = latency(); !s.ok()) return s;
    if (auto s = large(); !s.ok()) return s;
    if (auto s = small(); !s.ok()) return s;
    if (auto s = listing(); !s.ok()) return s;
    advise();
    return absl::OkStatus();
  }

 private:
  ObjectStore& store() { return *location_.store; }

  // Median of 5 of each small operation on a 1 KiB object.
  absl::Status latency() {
    std::vector<double> write_ms, stat_ms, read_ms, delete_ms;
    const std::string data = random_payload(1024, 1);
    for (int i = 0; i < 5; ++i) {
      const std::string name = absl::StrCat(scratch_, "latency-", i);
      WriteObjectRequest write;
      write.bucket = bucket_;
      write.object = name;
      auto start = Clock::now();
      if (auto r = store().write_object(write, data); !r.ok()) return r.status();
      write_ms.push_back(seconds_since(start) * 1e3);
      start = Clock::now();
      if (auto r = store().get_object_metadata(bucket_, name); !r.ok()) return r.status();
      stat_ms.push_back(seconds_since(start) * 1e3);
      ReadObjectRequest read;
      read.bucket = bucket_;
      read.object = name;
      std::string buffer(data.size(), '\0');
      start = Clock::now();
      if (auto r = store().read_object(read, buffer.data(), buffer.size()); !r.ok()) {
        return r.status();
      }
      read_ms.push_back(seconds_since(start) * 1e3);
      DeleteObjectRequest remove;
      remove.bucket = bucket_;
      remove.object = name;
      start = Clock::now();
      if (auto s = store().delete_object(remove); !s.ok()) return s;
      delete_ms.push_back(seconds_since(start) * 1e3);
    }
    std::fprintf(io_.out,
                 "latency (median of 5, 1 KiB): write %.1f ms, stat %.1f ms, read %.1f ms, "
                 "delete %.1f ms\n",
                 median(write_ms), median(stat_ms), median(read_ms), median(delete_ms));
    return absl::OkStatus();
  }

  // One large object: up as one stream and in parallel parts, down as one stream and as
  // parallel ranges, at a few levels of parallelism.
  absl::Status large() {
    const std::uint64_t size = options_.large_bytes;
    const std::string data = random_payload(size, 2);
    const std::string name = scratch_ + "large";
    auto upload = [&](UploadStrategy strategy, int parts) -> absl::StatusOr<double> {
      UploadOptions up;
      up.strategy = strategy;
      up.part_size = std::max<std::uint64_t>(size / 8, 5ull << 20);
      up.max_parts_in_flight = parts;
      up.expected_size = size;
      auto start = Clock::now();
      auto uploader = Uploader::create(location_.store, bucket_, name, up);
      if (!uploader.ok()) return uploader.status();
      if (auto s = (*uploader)->write(data.data(), data.size()); !s.ok()) return s;
      if (auto r = (*uploader)->commit(); !r.ok()) return r.status();
      return static_cast<double>(size) / seconds_since(start) / 1e6;
    };
    auto single_up = upload(UploadStrategy::kSingleStream, 1);
    if (!single_up.ok()) return single_up.status();
    best_parts_ = 8;
    double best_up = 0;
    for (int parts : {4, 8, 16}) {
      auto mbps = upload(UploadStrategy::kParts, parts);
      if (!mbps.ok()) return mbps.status();
      if (*mbps > best_up * 1.1) {
        best_up = *mbps;
        best_parts_ = parts;
      }
    }
    parts_pay_ = best_up > *single_up * 1.3;
    std::fprintf(io_.out,
                 "upload %s: one stream %.1f MB/s, parallel parts %.1f MB/s (%d in flight)\n",
                 human_bytes(size).c_str(), *single_up, best_up, best_parts_);

    std::string buffer(size, '\0');
    ReadObjectRequest read;
    read.bucket = bucket_;
    read.object = name;
    auto start = Clock::now();
    if (auto r = store().read_object(read, buffer.data(), buffer.size()); !r.ok()) {
      return r.status();
    }
    const double single_down = static_cast<double>(size) / seconds_since(start) / 1e6;
    double best_down = 0;
    best_ranges_ = 16;
    for (int ranges : {4, 16, 64}) {
      internal::RangedReadOptions ranged;
      ranged.range_size = std::max<std::uint64_t>(size / 16, 1 << 20);
      ranged.max_requests_in_flight = ranges;
      start = Clock::now();
      auto r = internal::read_object_ranged(store(), bucket_, name, ranged,
                                            [&](std::uint64_t) { return buffer.data(); });
      if (!r.ok()) return r.status();
      const double mbps = static_cast<double>(size) / seconds_since(start) / 1e6;
      if (mbps > best_down * 1.1) {
        best_down = mbps;
        best_ranges_ = ranges;
      }
    }
    std::fprintf(io_.out,
                 "download %s: one stream %.1f MB/s, parallel ranges %.1f MB/s (%d in flight)\n",
                 human_bytes(size).c_str(), single_down, best_down, best_ranges_);
    return absl::OkStatus();
  }

  // Many small objects: written with 32 in flight, then read with the Fetcher at 16, 64 and
  // 256 requests in flight.
  absl::Status small() {
    const int count = options_.small_objects;
    const std::uint64_t size = options_.small_bytes;
    const std::string data = random_payload(size, 3);
    std::vector<ObjectEntry> objects(static_cast<std::size_t>(count));
    absl::Status first_error;
    std::mutex mu;
    auto start = Clock::now();
    parallel_for(objects.size(), 32, [&](std::size_t i) {
      WriteObjectRequest write;
      write.bucket = bucket_;
      write.object = absl::StrFormat("%ssmall/%06d", scratch_, i);
      auto r = store().write_object(write, data);
      std::lock_guard<std::mutex> lock(mu);
      if (!r.ok()) {
        if (first_error.ok()) first_error = r.status();
        return;
      }
      objects[i] = ObjectEntry(*r);
    });
    if (!first_error.ok()) return first_error;
    const double write_rate = count / seconds_since(start);
    std::fprintf(io_.out, "small objects (%d x %s): write %.0f objects/s (32 in flight)\n", count,
                 human_bytes(size).c_str(), write_rate);
    double best = 0;
    best_in_flight_ = 64;
    std::vector<std::string> buffers(objects.size(), std::string(size, '\0'));
    for (std::size_t in_flight : {16, 64, 256}) {
      FetchOptions fetch;
      fetch.max_requests_in_flight = in_flight;
      fetch.disable_compose = true;
      Fetcher fetcher(location_.store, bucket_, fetch);
      std::vector<FetchTarget> targets;
      for (std::size_t i = 0; i < objects.size(); ++i) {
        targets.push_back({objects[i], buffers[i].data(), ""});
      }
      start = Clock::now();
      if (auto s = fetcher.fetch(targets); !s.ok()) return s;
      const double rate = count / seconds_since(start);
      std::fprintf(io_.out, "  read %.0f objects/s with %zu requests in flight\n", rate, in_flight);
      if (rate > best * 1.1) {
        best = rate;
        best_in_flight_ = in_flight;
      }
    }
    return absl::OkStatus();
  }

  absl::Status listing() {
    auto start = Clock::now();
    auto listing = list_objects_fast(store(), bucket_, scratch_ + "small/");
    if (!listing.ok()) return listing.status();
    std::fprintf(io_.out, "listing: %zu objects in %.2f s (%.0f objects/s; a page is 1,000)\n",
                 listing->size(), seconds_since(start),
                 static_cast<double>(listing->size()) / seconds_since(start));
    return absl::OkStatus();
  }

  void advise() {
    std::fprintf(io_.out, "\nsuggested options for %s:\n", location_.url.to_string().c_str());
    std::fprintf(io_.out, "  DatasetOptions().max_requests_in_flight(%zu)   // small objects\n",
                 best_in_flight_);
    std::fprintf(io_.out, "  CheckpointOptions: max_requests_in_flight = %d;  // ranged loads\n",
                 best_ranges_);
    if (parts_pay_) {
      std::fprintf(io_.out,
                   "  CheckpointOptions: upload.max_parts_in_flight = %d;  // parallel parts pay "
                   "here\n",
                   best_parts_);
    } else {
      std::fprintf(io_.out,
                   "  CheckpointOptions: upload.strategy = UploadStrategy::kSingleStream;  // "
                   "parts do not pay here\n");
    }
  }

  const Location& location_;
  const PerfdiagOptions& options_;
  const Io& io_;
  const std::string bucket_;
  const std::string scratch_;
  std::size_t best_in_flight_ = 64;
  int best_ranges_ = 16;
  int best_parts_ = 8;
  bool parts_pay_ = true;
};

}  // namespace

int run_perfdiag(const PerfdiagOptions& options, const Io& io) {
  Failures failures(io);
  return for_each_location({options.url}, io, failures, [&](const Location& location) {
    Perfdiag diag(location, options, io);
    if (auto s = diag.run(); !s.ok()) failures.add(s);
  });
}

}  // namespace dataflux::cli
