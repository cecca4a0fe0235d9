// Driver for the `small-objects` benchmark scenario (run by bench/run, one variant per process
// so peak RSS is per variant): one epoch through libtorch's DataLoader.
//
//   dataflux_bench_datasets --endpoint URL --bucket B --prefix P --variant V
//                           [--workers 4] [--batch 32] [--s3]
//
//   --s3:        read s3://B/P through our S3 store at URL (path-style, SigV4) instead of
//                gs://; credentials and region from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
//                AWS_REGION (the `s3-small-objects` scenario).
//   blocking:    the baseline a user writes by hand: a torch Dataset whose get() does one
//                blocking GET per sample (sizes from the listing, as ours), stateless loader.
//   map:         dataflux::MapDataset, compose off, stateless loader.
//   map-compose: dataflux::MapDataset, every eligible batch composed (force_compose).
//   streaming:   dataflux::StreamingDataset, stateful loader.
// Each checks that every sample arrived with its listed size, and prints one JSON line.
#include <sys/resource.h>
#include <torch/data/dataloader.h>
#include <torch/data/datasets/base.h>
#include <torch/data/samplers/sequential.h>

#include <ATen/ops/empty.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "dataflux/dataset.h"
#include "dataflux/gcs.h"
#include "dataflux/s3.h"
#include "engine/dataset_listing.h"

namespace {

struct Args {
  std::string endpoint, bucket = "bench", prefix, variant = "map";
  std::size_t workers = 4, batch = 32;
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
    else
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

template <typename Loader>
void drain(Loader& loader, std::size_t* samples, std::uint64_t* bytes) {
  for (auto& batch : *loader) {
    for (auto& example : batch) {
      ++*samples;
      *bytes += static_cast<std::uint64_t>(example.data.numel());
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

  std::size_t samples = 0;
  std::uint64_t bytes = 0;
  auto t0 = std::chrono::steady_clock::now();
  if (a.variant == "blocking") {
    auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        BlockingDataset(store, a.bucket, objects), loader_options);
    drain(loader, &samples, &bytes);
  } else if (a.variant == "map" || a.variant == "map-compose") {
    options.disable_compose(a.variant == "map").force_compose(a.variant == "map-compose");
    auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        dataflux::MapDataset(url, options), loader_options);
    drain(loader, &samples, &bytes);
  } else if (a.variant == "streaming") {
    auto loader =
        torch::data::make_data_loader(dataflux::StreamingDataset(url, options), loader_options);
    drain(loader, &samples, &bytes);
  } else {
    die("unknown variant " + a.variant);
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (samples != objects.size() || bytes != expected_bytes) {
    die("got " + std::to_string(samples) + " samples / " + std::to_string(bytes) +
        " bytes, expected " + std::to_string(objects.size()) + " / " +
        std::to_string(expected_bytes));
  }
  std::printf("{\"objects\": %zu, \"bytes\": %llu, \"wall_s\": %.4f, \"peak_rss_mb\": %.1f}\n",
              samples, static_cast<unsigned long long>(bytes), wall, peak_rss_mb());
  return 0;
} catch (const std::exception& e) {
  std::cerr << "dataflux_bench_datasets: " << e.what() << "\n";
  return 1;
}
