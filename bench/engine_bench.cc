// Driver for the `engine` benchmark scenario (run by bench/run, one variant per process so
// peak RSS is per variant).
//
//   dataflux_bench_engine --endpoint URL --bucket B --prefix P --setup --count N --size BYTES
//                         [--s3]
//   dataflux_bench_engine --endpoint URL --bucket B --prefix P --variant engine|curl [--range-mib
//   R]
//
// --setup uploads N objects of BYTES random bytes with the emulator's cloud model switched
// off (and restores it); with --s3 it uploads through our S3 store instead (path-style, SigV4,
// credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). A run lists the prefix (untimed),
// fetches every object, checks sizes (and, for the engine, CRC32C), and prints one JSON line with
// its measurements.
//   engine: every object (or every R MiB range of it) as an asynchronous read on the
//           libcurl-multi transport, all in flight at once within the transport's limits.
//   curl:   what a user writes by hand: one blocking curl_easy GET at a time, one reused
//           handle (keep-alive), into the same preallocated buffers.
#include <curl/curl.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dataflux/crc32c.h"
#include "dataflux/gcs.h"
#include "dataflux/s3.h"
#include "http/http_transport.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string endpoint, bucket = "bench", prefix = "engine/", variant = "engine";
  bool setup = false;
  bool s3 = false;  // --setup through the S3 API
  int count = 0;
  std::uint64_t size = 0;
  std::uint64_t range_mib = 16;
  std::map<std::string, std::string> model;  // restored after setup
};

[[noreturn]] void die(const std::string& message) {
  std::cerr << "dataflux_bench_engine: " << message << "\n";
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die("missing value for " + k);
      return argv[++i];
    };
    if (k == "--endpoint")
      a.endpoint = value();
    else if (k == "--bucket")
      a.bucket = value();
    else if (k == "--prefix")
      a.prefix = value();
    else if (k == "--variant")
      a.variant = value();
    else if (k == "--setup")
      a.setup = true;
    else if (k == "--s3")
      a.s3 = true;
    else if (k == "--count")
      a.count = std::stoi(value());
    else if (k == "--size")
      a.size = std::stoull(value());
    else if (k == "--range-mib")
      a.range_mib = std::stoull(value());
    else if (k == "--latency-ms" || k == "--stream-mb-per-s")
      a.model[k.substr(2)] = value();
    else
      die("unknown argument " + k);
  }
  if (a.endpoint.empty()) die("--endpoint is required");
  if (a.s3 && !a.setup) die("--s3 goes with --setup");
  return a;
}

// POSTs a cloud model to the emulator's control endpoint.
void set_model(const Args& a, const std::string& latency_ms, const std::string& mb_per_s) {
  dataflux::internal::HttpRequest req;
  req.method = "POST";
  req.url = a.endpoint + "/_dataflux/model";
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = "{\"latency_ms\":" + latency_ms + ",\"stream_mb_per_s\":" + mb_per_s + "}";
  auto resp = dataflux::internal::HttpTransport::instance()->send(std::move(req));
  if (!resp.status.ok() || resp.http_status != 200) die("cannot set the emulator's cloud model");
}

std::shared_ptr<dataflux::GcsStore> make_store(const Args& a) {
  dataflux::GcsOptions options;
  options.endpoint = a.endpoint;
  options.anonymous = !a.endpoint.empty();  // --endpoint names an emulator
  auto store = dataflux::make_gcs_store(options);
  if (!store.ok()) die(std::string(store.status().message()));
  return *store;
}

// The store --setup writes through (and creates the bucket in; it may exist already).
std::shared_ptr<dataflux::ObjectStore> make_setup_store(const Args& a) {
  if (!a.s3) {
    auto store = make_store(a);
    (void)store->create_bucket(a.bucket);
    return store;
  }
  dataflux::S3Options options;
  options.endpoint = a.endpoint;
  options.addressing = dataflux::S3Addressing::kPath;
  auto store = dataflux::make_s3_store(options);
  if (!store.ok()) die(std::string(store.status().message()));
  auto created = (*store)->create_bucket(a.bucket);
  if (!created.ok() && created.code() != absl::StatusCode::kAlreadyExists)
    std::cerr << "create_bucket " << a.bucket << ": " << created << "\n";
  return *store;
}

int setup(const Args& a) {
  auto store = make_setup_store(a);
  set_model(a, "0", "0");
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::string data(a.size, '\0');
      for (int i; (i = next++) < a.count;) {
        for (std::size_t k = 0; k + 8 <= data.size(); k += 8) {
          std::uint64_t v = rng();
          std::memcpy(&data[k], &v, 8);
        }
        char name[64];
        std::snprintf(name, sizeof(name), "%06d", i);
        dataflux::WriteObjectRequest req;
        req.bucket = a.bucket;
        req.object = a.prefix + name;
        auto m = store->write_object(req, data);
        if (!m.ok()) {
          std::cerr << m.status() << "\n";
          failed = true;
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  set_model(a, a.model.count("latency-ms") ? a.model.at("latency-ms") : "0",
            a.model.count("stream-mb-per-s") ? a.model.at("stream-mb-per-s") : "0");
  return failed ? 1 : 0;
}

std::vector<dataflux::ObjectMetadata> list_all(dataflux::ObjectStore& store, const Args& a) {
  std::vector<dataflux::ObjectMetadata> out;
  dataflux::ListObjectsRequest req;
  req.bucket = a.bucket;
  req.prefix = a.prefix;
  do {
    auto page = store.list_objects(req);
    if (!page.ok()) die(std::string(page.status().message()));
    out.insert(out.end(), page->objects.begin(), page->objects.end());
    req.page_token = page->next_page_token;
  } while (!req.page_token.empty());
  if (out.empty()) die("nothing to fetch under " + a.prefix + " (run --setup first)");
  return out;
}

double cpu_seconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double peak_rss_mb() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

// Engine: every object, or every range of a large one, in flight at once on the transport.
std::size_t run_engine(dataflux::ObjectStore& store, const Args& a,
                       const std::vector<dataflux::ObjectMetadata>& objects,
                       std::vector<std::vector<char>>& buffers, std::size_t* requests) {
  std::mutex mu;
  std::condition_variable cv;
  std::size_t pending = 0;
  std::string error;
  const std::uint64_t range = a.range_mib << 20;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const auto& o = objects[i];
    std::uint64_t pieces = o.size > range ? (o.size + range - 1) / range : 1;
    for (std::uint64_t p = 0; p < pieces; ++p) {
      dataflux::ReadObjectRequest req;
      req.bucket = a.bucket;
      req.object = o.name;
      req.generation = o.generation;
      if (pieces > 1) {
        req.offset = p * range;
        req.length = std::min(range, o.size - req.offset);
      } else {
        req.expected_crc32c = o.crc32c;
      }
      std::size_t capacity = static_cast<std::size_t>(req.length.value_or(o.size));
      {
        std::lock_guard<std::mutex> lock(mu);
        ++pending;
      }
      ++*requests;
      store.read_object_async(req, buffers[i].data() + req.offset, capacity,
                              [&](absl::StatusOr<dataflux::ReadObjectResult> r) {
                                std::lock_guard<std::mutex> lock(mu);
                                if (!r.ok() && error.empty()) error = r.status().ToString();
                                if (--pending == 0) cv.notify_all();
                              });
    }
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return pending == 0; });
  if (!error.empty()) die("engine read failed: " + error);
  // Ranged reads are not checked per range: check each large object as a whole.
  for (std::size_t i = 0; i < objects.size(); ++i) {
    if (objects[i].size > range && objects[i].crc32c &&
        dataflux::crc32c_extend(0, buffers[i].data(), buffers[i].size()) != *objects[i].crc32c) {
      die("CRC32C mismatch on " + objects[i].name);
    }
  }
  return objects.size();
}

struct CurlSink {
  char* data;
  std::size_t capacity;
  std::size_t used;
};

std::size_t curl_write(char* p, std::size_t size, std::size_t n, void* user) {
  auto* sink = static_cast<CurlSink*>(user);
  std::size_t bytes = size * n;
  if (sink->used + bytes > sink->capacity) return 0;
  std::memcpy(sink->data + sink->used, p, bytes);
  sink->used += bytes;
  return bytes;
}

std::string encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// Baseline: one blocking GET at a time on one reused easy handle.
std::size_t run_curl(const Args& a, const std::vector<dataflux::ObjectMetadata>& objects,
                     std::vector<std::vector<char>>& buffers, std::size_t* requests) {
  CURL* curl = curl_easy_init();
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, curl_write);
  for (std::size_t i = 0; i < objects.size(); ++i) {
    std::string url = a.endpoint + "/download/storage/v1/b/" + encode(a.bucket) + "/o/" +
                      encode(objects[i].name) + "?alt=media";
    CurlSink sink{buffers[i].data(), buffers[i].size(), 0};
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
    CURLcode rc = curl_easy_perform(curl);
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    ++*requests;
    if (rc != CURLE_OK || code != 200 || sink.used != objects[i].size) {
      die("baseline GET failed for " + objects[i].name);
    }
  }
  curl_easy_cleanup(curl);
  return objects.size();
}

int run(const Args& a) {
  auto store = make_store(a);
  auto objects = list_all(*store, a);
  std::vector<std::vector<char>> buffers;
  std::uint64_t bytes = 0;
  for (const auto& o : objects) {
    buffers.emplace_back(o.size);
    // Touch the pages now so first-touch cost is outside the timed part for both variants.
    std::memset(buffers.back().data(), 0, o.size);
    bytes += o.size;
  }
  std::size_t requests = 0;
  double cpu0 = cpu_seconds();
  auto t0 = Clock::now();
  if (a.variant == "engine") {
    run_engine(*store, a, objects, buffers, &requests);
  } else if (a.variant == "curl") {
    run_curl(a, objects, buffers, &requests);
  } else {
    die("unknown variant " + a.variant);
  }
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  double cpu = cpu_seconds() - cpu0;
  auto stats = dataflux::internal::HttpTransport::instance()->stats();
  std::printf(
      "{\"objects\": %zu, \"bytes\": %llu, \"requests\": %zu, \"wall_s\": %.4f, \"cpu_s\": %.3f, "
      "\"peak_rss_mb\": %.1f, \"peak_in_flight\": %zu}\n",
      objects.size(), static_cast<unsigned long long>(bytes), requests, wall, cpu, peak_rss_mb(),
      a.variant == "engine" ? stats.peak_in_flight : std::size_t{1});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  Args a = parse(argc, argv);
  return a.setup ? setup(a) : run(a);
}
