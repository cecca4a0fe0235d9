// Driver for the `checkpoint` benchmark scenario (run by bench/run, one variant per process so
// peak RSS is per variant). The checkpoint is SIZE random bytes fed in the pattern torch::save
// uses (small headers, then each tensor in one write of TENSOR bytes).
//
//   dataflux_bench_checkpoint --endpoint URL --bucket B --object O --size BYTES --variant V
//   save-parts      Uploader, parts composed (ours)
//   save-stream     one resumable session (single-stream baseline)
//   save-buffered   everything buffered in memory first, then the parts upload (the Python
//                   connector's approach)
//   load-ranged     parallel ranged GETs into one buffer, CRC32C verified (ours)
//   load-single     one GET of the whole object (baseline)
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/io_buffer.h"
#include "dataflux/gcs.h"
#include "dataflux/upload.h"
#include "engine/ranged_read.h"

namespace {

[[noreturn]] void die(const std::string& m) {
  std::cerr << "dataflux_bench_checkpoint: " << m << "\n";
  std::exit(2);
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string endpoint, bucket = "bench", object = "ckpt.pt", variant;
  std::uint64_t size = 0, tensor = 64ull << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--endpoint")
      endpoint = v;
    else if (k == "--bucket")
      bucket = v;
    else if (k == "--object")
      object = v;
    else if (k == "--size")
      size = std::stoull(v);
    else if (k == "--tensor")
      tensor = std::stoull(v);
    else if (k == "--variant")
      variant = v;
    else
      die("unknown argument " + k);
  }
  dataflux::GcsOptions options;
  options.endpoint = endpoint;
  options.anonymous = !endpoint.empty();  // --endpoint names an emulator
  auto store = dataflux::make_gcs_store(options);
  if (!store.ok()) die(store.status().ToString());
  std::shared_ptr<dataflux::ObjectStore> s = *store;

  // One tensor's worth of pseudo-random bytes, reused (generation is not what is measured).
  std::string block(static_cast<std::size_t>(std::min(tensor, size)), '\0');
  std::mt19937_64 rng(42);
  for (std::size_t i = 0; i + 8 <= block.size(); i += 8) {
    std::uint64_t r = rng();
    std::memcpy(&block[i], &r, 8);
  }
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t requests = 0;
  dataflux::UploadStats upload_stats;  // save variants: the uploader's own accounting
  if (variant.rfind("save-", 0) == 0) {
    dataflux::UploadOptions up;
    up.strategy = variant == "save-stream" ? dataflux::UploadStrategy::kSingleStream
                                           : dataflux::UploadStrategy::kParts;
    std::string all;  // save-buffered only
    auto sink = [&](auto& uploader, const char* p, std::size_t n) {
      if (variant == "save-buffered") {
        all.append(p, n);
      } else if (auto st = uploader->write(p, n); !st.ok()) {
        die(st.ToString());
      }
    };
    auto uploader = dataflux::Uploader::create(s, bucket, object, up);
    if (!uploader.ok()) die(uploader.status().ToString());
    static const char header[64] = {};
    for (std::uint64_t done = 0; done < size;) {
      sink(*uploader, header, 30);
      sink(*uploader, header, 14);
      const std::uint64_t n = std::min<std::uint64_t>(block.size(), size - done);
      sink(*uploader, block.data(), static_cast<std::size_t>(n));
      done += n;
    }
    if (variant == "save-buffered") {
      if (auto st = (*uploader)->write(all.data(), all.size()); !st.ok()) die(st.ToString());
    }
    auto meta = (*uploader)->commit();
    if (!meta.ok()) die(meta.status().ToString());
    size = meta->size;
    upload_stats = (*uploader)->stats();
    requests = upload_stats.parts;
  } else {
    dataflux::internal::RangedReadOptions o;
    if (variant == "load-single") {
      o.range_size = ~0ull;
      o.max_requests_in_flight = 1;
    } else if (variant != "load-ranged") {
      die("unknown variant " + variant);
    }
    dataflux::internal::IoBuffer buffer;  // what CheckpointReader loads into
    auto r = dataflux::internal::read_object_ranged(*s, bucket, object, o, [&](std::uint64_t n) {
      buffer = dataflux::internal::allocate_io_buffer(n);
      return buffer.get();
    });
    if (!r.ok()) die(r.status().ToString());
    size = r->bytes;
    requests = r->requests;
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const double cpu =
      u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  std::cout << "{\"wall_s\": " << wall << ", \"bytes\": " << size << ", \"objects\": 1"
            << ", \"peak_rss_mb\": " << peak_rss_mb() << ", \"cpu_s\": " << cpu
            << ", \"requests\": " << requests
            << ", \"peak_in_flight\": " << upload_stats.peak_parts_in_flight
            << ", \"peak_buffered_mb\": " << upload_stats.peak_buffered_bytes / 1048576.0 << "}"
            << std::endl;
  return 0;
}
