// Driver for the `listing` benchmark scenario (run by bench/run, one variant per process so
// peak RSS is per variant).
//
//   dataflux_bench_listing --objects N --variant plain|fast [--workers W] [--latency-ms L]
//
// Starts an in-process emulator (loopback, free port), fills it with N objects named
// "train/class-CCC/NNNNNNN.jpg" through its direct API (no HTTP: 200,000 uploads would
// dominate the run), switches on the cloud model (L ms before every response), lists
// "train/" over HTTP and prints one JSON line:
//   plain: what a user writes by hand: one list_objects page after another, keeping the
//          ObjectMetadata of each object in a std::vector.
//   fast:  dataflux::list_objects_fast with W workers (W = 1: sequential through the lister).
// bytes_per_object is the heap the result holds per listed object (the Listing's
// memory_bytes(), or the vector's and its strings' for plain).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "dataflux/gcs.h"
#include "dataflux/listing.h"
#include "emulator/emulator.h"

namespace {

[[noreturn]] void die(const std::string& message) {
  std::cerr << "dataflux_bench_listing: " << message << "\n";
  std::exit(2);
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

std::size_t heap_of(const std::string& s) {
  return s.capacity() > 15 ? s.capacity() + 1 : 0;  // libstdc++ keeps <= 15 bytes inline
}

}  // namespace

int main(int argc, char** argv) {
  int objects = 0, workers = 32, latency_ms = 30;
  std::string variant = "fast";
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (i + 1 >= argc) die("missing value for " + k);
    std::string v = argv[++i];
    if (k == "--objects") {
      objects = std::atoi(v.c_str());
    } else if (k == "--workers") {
      workers = std::atoi(v.c_str());
    } else if (k == "--latency-ms") {
      latency_ms = std::atoi(v.c_str());
    } else if (k == "--variant") {
      variant = v;
    } else {
      die("unknown argument " + k);
    }
  }
  if (variant != "plain" && variant != "fast") die("--variant is plain or fast");

  dataflux::emulator::EmulatorOptions eo;
  eo.threads = 160;  // every worker's request waits out the latency on a server thread
  auto emu = dataflux::emulator::Emulator::start(eo);
  if (!emu.ok()) die(emu.status().ToString());
  const std::string bucket = "bench";
  if (!(*emu)->create_bucket(bucket).ok()) die("create bucket");
  for (int i = 0; i < objects; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "train/class-%03d/%07d.jpg", i % 100, i);
    if (!(*emu)->put_object(bucket, name, std::string(static_cast<std::size_t>(i % 7), 'x')).ok()) {
      die("put");
    }
  }
  dataflux::emulator::CloudModel model;
  model.first_byte_latency = absl::Milliseconds(latency_ms);
  (*emu)->set_cloud_model(model);

  dataflux::GcsOptions go;
  go.endpoint = (*emu)->endpoint();
  go.anonymous = true;
  go.project = "bench";
  auto store = dataflux::make_gcs_store(go);
  if (!store.ok()) die(store.status().ToString());

  (*emu)->reset_counters();
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t listed = 0, heap = 0;
  std::uint64_t splits = 0;
  int workers_used = 1;
  if (variant == "plain") {
    std::vector<dataflux::ObjectMetadata> all;
    dataflux::ListObjectsRequest request;
    request.bucket = bucket;
    request.prefix = "train/";
    do {
      auto page = (*store)->list_objects(request);
      if (!page.ok()) die(page.status().ToString());
      for (auto& o : page->objects) all.push_back(std::move(o));
      request.page_token = page->next_page_token;
    } while (!request.page_token.empty());
    listed = all.size();
    heap = all.capacity() * sizeof(dataflux::ObjectMetadata);
    for (const auto& o : all) {
      heap += heap_of(o.bucket) + heap_of(o.name) + heap_of(o.md5_hash) + heap_of(o.storage_class) +
              heap_of(o.content_type);
    }
  } else {
    dataflux::ListOptions options;
    options.workers = workers;
    dataflux::ListStats stats;
    auto listing = dataflux::list_objects_fast(**store, bucket, "train/", options, &stats);
    if (!listing.ok()) die(listing.status().ToString());
    listed = listing->size();
    heap = listing->memory_bytes();
    splits = stats.splits;
    workers_used = stats.workers;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  if (listed != static_cast<std::size_t>(objects)) {
    die("listed " + std::to_string(listed) + " of " + std::to_string(objects) + " objects");
  }
  std::printf(
      "{\"objects\": %zu, \"bytes\": 0, \"requests\": %llu, \"wall_s\": %.4f, \"cpu_s\": %.3f, "
      "\"peak_rss_mb\": %.1f, \"bytes_per_object\": %.1f, \"splits\": %llu, "
      "\"workers_used\": %d}\n",
      listed, static_cast<unsigned long long>((*emu)->request_count("objects.list")), wall, cpu,
      peak_rss_mb(), listed ? static_cast<double>(heap) / listed : 0.0,
      static_cast<unsigned long long>(splits), workers_used);
  return 0;
}
