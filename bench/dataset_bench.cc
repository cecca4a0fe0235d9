// Driver for the `small-objects` benchmark scenario (run by bench/run, one variant per process
// so peak RSS is per variant): one epoch through libtorch's DataLoader.
//
//   dataflux_bench_datasets --endpoint URL --bucket B --prefix P --variant V
//                           [--workers 4] [--batch 32] [--concurrency N] [--prefetch N] [--s3]
//
//   --s3:        read s3://B/P through our S3 store at URL (path-style, SigV4) instead of
//                gs://; credentials and region from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
//                AWS_REGION (the `s3-small-objects` scenario).
//   blocking:    the baseline a user writes by hand: a torch Dataset whose get() does one
//                blocking GET per sample (sizes from the listing, as ours), stateless loader.
//   map:         dataflux::MapDataset, compose off, stateless loader.
//   map-compose: dataflux::MapDataset, every eligible batch composed (force_compose).
//   streaming:   dataflux::StreamingDataset, stateful loader.
// The timer covers the epoch only: every variant lists (or is given the listing) before it
// starts, so listing time is reported apart as setup_s. --concurrency / --prefetch override
// the DatasetOptions defaults (0 = default) for experiments. Each checks that every sample
// arrived with its listed size, and prints one JSON line (wall_s, cpu_s, first_batch_s...).
#include <sys/resource.h>
#include <torch/data/dataloader.h>
#include <torch/data/datasets/base.h>
#include <torch/data/datasets/shared.h>
#include <torch/data/samplers/sequential.h>

#include <ATen/ops/empty.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <type_traits>

#include "dataflux/dataset.h"
#include "dataflux/gcs.h"
#include "dataflux/s3.h"
#include "engine/dataset_listing.h"

namespace {

struct Args {
  std::string endpoint, bucket = "bench", prefix, variant = "map";
  std::size_t workers = 4, batch = 32, concurrency = 0, prefetch = 0;
  bool prefetch_set = false;
  bool s3 = false;
};

[[noreturn]] void die(const std::string& message) {
  std::cerr << "dataflux_bench_datasets: " << message << "\n";
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--s3") {
      a.s3 = true;
      continue;
    }
    if (i + 1 >= argc) die("missing value for " + k);
    std::string v = argv[++i];
    if (k == "--endpoint")
      a.endpoint = v;
    else if (k == "--bucket")
      a.bucket = v;
    else if (k == "--prefix")
      a.prefix = v;
    else if (k == "--variant")
      a.variant = v;
    else if (k == "--workers")
      a.workers = std::stoul(v);
    else if (k == "--batch")
      a.batch = std::stoul(v);
    else if (k == "--concurrency")
      a.concurrency = std::stoul(v);
    else if (k == "--prefetch") {
      a.prefetch = std::stoul(v);
      a.prefetch_set = true;
    } else
      die("unknown argument " + k);
  }
  if (a.endpoint.empty()) die("--endpoint is required");
  return a;
}

// The baseline: one blocking GET per sample.
class BlockingDataset : public torch::data::datasets::Dataset<BlockingDataset> {
 public:
  BlockingDataset(std::shared_ptr<dataflux::ObjectStore> store, std::string bucket,
                  std::vector<dataflux::ObjectEntry> objects)
      : store_(std::move(store)),
        bucket_(std::move(bucket)),
        objects_(std::make_shared<std::vector<dataflux::ObjectEntry>>(std::move(objects))) {}
  torch::data::Example<> get(size_t index) override {
    const auto& o = (*objects_)[index];
    at::Tensor bytes = at::empty({static_cast<std::int64_t>(o.size)}, at::kByte);
    dataflux::ReadObjectRequest request;
    request.bucket = bucket_;
    request.object = o.name;
    auto result = store_->read_object(request, static_cast<char*>(bytes.data_ptr()), o.size);
    if (!result.ok()) throw dataflux::Error(result.status());
    return {bytes, at::Tensor()};
  }
  torch::optional<size_t> size() const override { return objects_->size(); }

 private:
  std::shared_ptr<dataflux::ObjectStore> store_;
  std::string bucket_;
  std::shared_ptr<std::vector<dataflux::ObjectEntry>> objects_;
};

double peak_rss_mb() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

double cpu_s() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Epoch {
  std::size_t samples = 0;
  std::uint64_t bytes = 0;
  double first_batch_s = 0;
};

// One epoch; the timer starts when the loader is made (its workers start), as a training loop's
// epoch would.
template <typename Loader>
void drain(Loader& loader, Clock::time_point t0, Epoch* epoch) {
  for (auto& batch : *loader) {
    if (epoch->samples == 0) epoch->first_batch_s = seconds_since(t0);
    for (auto& example : batch) {
      ++epoch->samples;
      epoch->bytes += static_cast<std::uint64_t>(example.data.numel());
    }
  }
}

// The store the run reads through, and the URL scheme that goes with it.
std::shared_ptr<dataflux::ObjectStore> open_bench_store(const Args& a, std::string* scheme) {
  if (a.s3) {
    dataflux::S3Options s3;
    s3.endpoint = a.endpoint;
    s3.addressing = dataflux::S3Addressing::kPath;
    *scheme = "s3://";
    return dataflux::make_s3_store(s3).value();
  }
  dataflux::GcsOptions gcs;
  gcs.endpoint = a.endpoint;
  gcs.anonymous = !a.endpoint.empty();  // --endpoint names an emulator
  *scheme = "gs://";
  return dataflux::make_gcs_store(gcs).value();
}

}  // namespace

int main(int argc, char** argv) try {
  Args a = parse(argc, argv);
  std::string scheme;
  std::shared_ptr<dataflux::ObjectStore> store = open_bench_store(a, &scheme);
  auto objects = dataflux::value_or_throw(
      dataflux::internal::list_dataset_objects(*store, a.bucket, a.prefix));
  std::uint64_t expected_bytes = 0;
  for (const auto& o : objects) expected_bytes += o.size;
  const std::string url = scheme + a.bucket + "/" + a.prefix;
  auto options = dataflux::DatasetOptions().store(store);
  auto loader_options = torch::data::DataLoaderOptions(a.batch).workers(a.workers);

  if (a.concurrency != 0) options.max_requests_in_flight(a.concurrency);
  if (a.prefetch_set) options.prefetch(a.prefetch);

  Epoch epoch;
  double setup_s = 0, wall = 0, cpu0 = 0;
  std::uint64_t reads = 0;  // read requests (objects read twice show up here)
  auto run_epoch = [&](auto dataset) {
    auto loader = [&] {
      if constexpr (std::decay_t<decltype(dataset)>::is_stateful) {
        return torch::data::make_data_loader(std::move(dataset), loader_options);
      } else {
        return torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
            std::move(dataset), loader_options);
      }
    };
    cpu0 = cpu_s();
    auto t0 = Clock::now();
    auto l = loader();
    drain(l, t0, &epoch);
    wall = seconds_since(t0);
  };
  auto s0 = Clock::now();
  if (a.variant == "blocking") {
    run_epoch(BlockingDataset(store, a.bucket, objects));
  } else if (a.variant == "map" || a.variant == "map-compose") {
    options.disable_compose(a.variant == "map").force_compose(a.variant == "map-compose");
    dataflux::MapDataset data(url, options);
    setup_s = seconds_since(s0);
    run_epoch(data);
    reads = data.fetch_stats().direct_reads + data.fetch_stats().composes;
  } else if (a.variant == "streaming") {
    auto data =
        torch::data::datasets::make_shared_dataset<dataflux::StreamingDataset>(url, options);
    setup_s = seconds_since(s0);
    run_epoch(data);
    reads = data->fetch_stats().direct_reads + data->fetch_stats().composes;
  } else {
    die("unknown variant " + a.variant);
  }
  const double cpu = cpu_s() - cpu0;
  const std::size_t samples = epoch.samples;
  const std::uint64_t bytes = epoch.bytes;
  if (samples != objects.size() || bytes != expected_bytes) {
    die("got " + std::to_string(samples) + " samples / " + std::to_string(bytes) +
        " bytes, expected " + std::to_string(objects.size()) + " / " +
        std::to_string(expected_bytes));
  }
  std::printf(
      "{\"objects\": %zu, \"bytes\": %llu, \"wall_s\": %.4f, \"peak_rss_mb\": %.1f, "
      "\"cpu_s\": %.3f, \"setup_s\": %.4f, \"first_batch_s\": %.4f, \"reads\": %llu}\n",
      samples, static_cast<unsigned long long>(bytes), wall, peak_rss_mb(), cpu, setup_s,
      epoch.first_batch_s, static_cast<unsigned long long>(reads));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "dataflux_bench_datasets: " << e.what() << "\n";
  return 1;
}
