// Driver for the `shards` benchmark scenario (run by bench/run, one variant per process so peak
// RSS is per variant). Every run is against a dataflux-emulator at --endpoint, on gs://.
//
//   dataflux_bench_shards --endpoint URL --bucket B --variant V [--prefix P] [--dest D]
//                         [--count N] [--size BYTES] [--workers 4] [--batch 32] [--threads 4]
//                         [--shard-size BYTES] [--shards-in-flight N]
//
// Data (untimed; bench/run switches the cloud model off around these):
//   prepare-images: N "images" under P: P/cNN/IIIII.jpg, 10 class folders (i % 10), each of
//                   random bytes, 90..110 KiB (mean 100 KiB), all from one seeded generator.
//   prepare-text:   N text objects P/part-IIIII.txt of up to BYTES each, of lines of 1,200..2,000
//                   random letters and spaces (mean ~1.6 KB) and a '\n'.
// Timed:
//   pack:            dataflux::pack_objects from gs://B/P into shards gs://B/D/train-*.tar
//                    (default options: shuffled, "cls" from the folder; shards of up to
//                    --shard-size bytes, default ShardWriterOptions' 1e8).
//   images-blocking: the baseline a user writes by hand: a torch Dataset whose get() does one
//                    blocking GET per sample; stateless DataLoader, RandomSampler.
//   images-loose:    dataflux::MapDataset over the loose images; stateless DataLoader,
//                    RandomSampler (so nothing is read ahead: the sampler's order is hidden).
//   images-shards:   dataflux::ShardDataset over gs://B/D/: shuffle(true), fields {jpg, cls},
//                    default read-ahead; stateful DataLoader, workers(0). --shards-in-flight
//                    overrides the read-ahead's shard count, for experiments.
//   text-sequential: the S3FileLoader baseline: each object whole with one GET, one object at
//                    a time, split into lines.
//   text-threads:    the same with --threads objects at once (one thread each).
//   text-lines:      dataflux::LineDataset (defaults: 4 objects in flight), get_batch(--batch).
// Every image variant yields (bytes, label) per sample and checks the count, the bytes and the
// samples per class against the listing of the loose images (the label of a loose image is its
// folder's number, as pack_objects numbers the sorted folders). Every text variant yields
// Example{the line's bytes (a view into the object's tensor, as LineDataset's), its number} and
// reports the lines and their bytes; bench/run checks that the variants agree. The timer covers
// the epoch only (listings are made before it starts). One JSON line on stdout.
#include <sys/resource.h>
#include <torch/data/dataloader.h>
#include <torch/data/datasets/base.h>
#include <torch/data/samplers/random.h>
#include <torch/utils.h>

#include <ATen/ops/empty.h>
#include <ATen/ops/scalar_tensor.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dataflux/dataset.h"
#include "dataflux/gcs.h"
#include "dataflux/line_dataset.h"
#include "dataflux/shard_dataset.h"
#include "dataflux/shards.h"
#include "engine/dataset_listing.h"

namespace {

constexpr int kClasses = 10;

struct Args {
  std::string endpoint, bucket = "bench", prefix, dest, variant;
  std::size_t count = 0, size = 0, workers = 4, batch = 32, threads = 4;
  std::uint64_t shard_size = 0;      // pack: ShardWriterOptions::max_size; 0 = its default
  std::size_t shards_in_flight = 0;  // images-shards: 0 = ShardDatasetOptions' default
};

[[noreturn]] void die(const std::string& message) {
  std::cerr << "dataflux_bench_shards: " << message << "\n";
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (i + 1 >= argc) die("missing value for " + k);
    std::string v = argv[++i];
    if (k == "--endpoint")
      a.endpoint = v;
    else if (k == "--bucket")
      a.bucket = v;
    else if (k == "--prefix")
      a.prefix = v;
    else if (k == "--dest")
      a.dest = v;
    else if (k == "--variant")
      a.variant = v;
    else if (k == "--count")
      a.count = std::stoul(v);
    else if (k == "--size")
      a.size = std::stoul(v);
    else if (k == "--workers")
      a.workers = std::stoul(v);
    else if (k == "--batch")
      a.batch = std::stoul(v);
    else if (k == "--threads")
      a.threads = std::stoul(v);
    else if (k == "--shard-size")
      a.shard_size = std::stoull(v);
    else if (k == "--shards-in-flight")
      a.shards_in_flight = std::stoul(v);
    else
      die("unknown argument " + k);
  }
  if (a.endpoint.empty() || a.variant.empty()) die("--endpoint and --variant are required");
  return a;
}

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

std::shared_ptr<dataflux::ObjectStore> open_bench_store(const Args& a) {
  dataflux::GcsOptions gcs;
  gcs.endpoint = a.endpoint;
  gcs.anonymous = true;  // --endpoint names an emulator
  auto store = dataflux::make_gcs_store(gcs);
  if (!store.ok()) die(std::string(store.status().message()));
  (void)(*store)->create_bucket(a.bucket);  // may exist already
  return *store;
}

std::string url_of(const Args& a, const std::string& prefix) {
  return "gs://" + a.bucket + "/" + prefix;
}

// Uploads `count` objects from `make(i, &bytes)` with 4 threads (untimed data preparation).
template <typename Make>
void upload_all(dataflux::ObjectStore& store, const Args& a, std::size_t count, Make make) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::string data;
      for (std::size_t i; !failed && (i = next++) < count;) {
        dataflux::WriteObjectRequest request;
        request.bucket = a.bucket;
        request.object = make(i, &data);
        auto written = store.write_object(request, data);
        if (!written.ok()) {
          std::cerr << request.object << ": " << written.status() << "\n";
          failed = true;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failed) die("data preparation failed");
}

// ---- images ----------------------------------------------------------------------------------

// Image i: P/c{i % 10}/{i}.jpg, 90..110 KiB of random bytes, a function of i alone.
std::string make_image(const std::string& prefix, std::size_t i, std::string* bytes) {
  std::mt19937_64 rng(i);
  const std::size_t size = (90 << 10) + rng() % ((20 << 10) + 1);
  bytes->resize(size);
  for (std::size_t k = 0; k < size; k += 8) {
    const std::uint64_t v = rng();
    std::memcpy(bytes->data() + k, &v, std::min<std::size_t>(8, size - k));
  }
  char name[32];
  std::snprintf(name, sizeof(name), "c%02d/%05zu.jpg", static_cast<int>(i % kClasses), i);
  return prefix + name;
}

// The label of a loose image: its folder's number ("P/c07/00017.jpg" -> 7), which is also the
// index pack_objects gives the folder among the sorted folder names.
std::int64_t label_of(const std::string& name, std::size_t prefix_size) {
  return std::stoi(name.substr(prefix_size + 1, 2));
}

struct Tally {
  std::size_t samples = 0;
  std::uint64_t bytes = 0;
  std::vector<std::size_t> per_class = std::vector<std::size_t>(kClasses, 0);
};

void count(const torch::data::Example<>& example, Tally* t) {
  ++t->samples;
  t->bytes += static_cast<std::uint64_t>(example.data.numel());
  const std::int64_t label = example.target.item<std::int64_t>();
  if (label < 0 || label >= kClasses) die("label out of range: " + std::to_string(label));
  ++t->per_class[static_cast<std::size_t>(label)];
}

void check(const Tally& got, const Tally& want, const std::string& what) {
  if (got.samples != want.samples || got.bytes != want.bytes || got.per_class != want.per_class) {
    std::string message = what + ": got " + std::to_string(got.samples) + " samples / " +
                          std::to_string(got.bytes) + " bytes, expected " +
                          std::to_string(want.samples) + " / " + std::to_string(want.bytes) +
                          "; per class got/expected:";
    for (int c = 0; c < kClasses; ++c) {
      message += " " + std::to_string(got.per_class[c]) + "/" + std::to_string(want.per_class[c]);
    }
    die(message);
  }
}

// The baseline: one blocking GET per sample.
class BlockingDataset : public torch::data::datasets::Dataset<BlockingDataset> {
 public:
  BlockingDataset(std::shared_ptr<dataflux::ObjectStore> store, std::string bucket,
                  std::size_t prefix_size, std::vector<dataflux::ObjectEntry> objects)
      : store_(std::move(store)),
        bucket_(std::move(bucket)),
        prefix_size_(prefix_size),
        objects_(std::make_shared<std::vector<dataflux::ObjectEntry>>(std::move(objects))) {}
  torch::data::Example<> get(size_t index) override {
    const auto& o = (*objects_)[index];
    at::Tensor bytes = at::empty({static_cast<std::int64_t>(o.size)}, at::kByte);
    dataflux::ReadObjectRequest request;
    request.bucket = bucket_;
    request.object = o.name;
    auto result = store_->read_object(request, static_cast<char*>(bytes.data_ptr()), o.size);
    if (!result.ok()) throw dataflux::Error(result.status());
    return {bytes, at::scalar_tensor(label_of(o.name, prefix_size_), at::kLong)};
  }
  torch::optional<size_t> size() const override { return objects_->size(); }

 private:
  std::shared_ptr<dataflux::ObjectStore> store_;
  std::string bucket_;
  std::size_t prefix_size_;
  std::shared_ptr<std::vector<dataflux::ObjectEntry>> objects_;
};

struct Timed {
  std::size_t objects = 0;
  std::uint64_t bytes = 0;
  double wall_s = 0, cpu_s = 0, setup_s = 0, first_batch_s = -1;
  std::string extra;  // more JSON fields, each starting with ", "
};

template <typename Loader>
void drain(Loader& loader, Clock::time_point t0, Tally* tally, Timed* timed) {
  for (auto& batch : *loader) {
    if (timed->first_batch_s < 0) timed->first_batch_s = seconds_since(t0);
    for (auto& example : batch) count(example, tally);
  }
}

Timed images(const Args& a, const std::shared_ptr<dataflux::ObjectStore>& store) {
  const auto s0 = Clock::now();
  auto objects = dataflux::value_or_throw(
      dataflux::internal::list_dataset_objects(*store, a.bucket, a.prefix));
  Tally want;
  for (const auto& o : objects) {
    ++want.samples;
    want.bytes += o.size;
    ++want.per_class[static_cast<std::size_t>(label_of(o.name, a.prefix.size()))];
  }
  Timed t;
  Tally got;
  torch::manual_seed(1);  // the RandomSampler's order
  const auto options = torch::data::DataLoaderOptions(a.batch).workers(a.workers);
  double cpu0 = 0;
  Clock::time_point t0;
  auto start = [&] {  // the epoch starts when the loader is made (its workers start)
    t.setup_s = seconds_since(s0);
    cpu0 = cpu_s();
    t0 = Clock::now();
  };
  if (a.variant == "images-blocking") {
    BlockingDataset data(store, a.bucket, a.prefix.size(), objects);
    start();
    auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
        std::move(data), options);
    drain(loader, t0, &got, &t);
  } else if (a.variant == "images-loose") {
    const std::size_t prefix_size = a.prefix.size();
    dataflux::MapDataset data(
        url_of(a, a.prefix),
        dataflux::DatasetOptions().store(store).transform(
            [prefix_size](at::Tensor bytes, const dataflux::ObjectEntry& o, std::size_t) {
              return torch::data::Example<>{
                  std::move(bytes), at::scalar_tensor(label_of(o.name, prefix_size), at::kLong)};
            }));
    start();
    auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
        std::move(data), options);
    drain(loader, t0, &got, &t);
  } else {  // images-shards
    auto shard_options =
        dataflux::ShardDatasetOptions().store(store).shuffle(true).fields({"jpg", "cls"});
    if (a.shards_in_flight != 0) shard_options.shards_in_flight(a.shards_in_flight);
    dataflux::ShardDataset data(url_of(a, a.dest), shard_options);
    start();
    auto loader = torch::data::make_data_loader(std::move(data),
                                                torch::data::DataLoaderOptions(a.batch).workers(0));
    drain(loader, t0, &got, &t);
  }
  t.wall_s = seconds_since(t0);
  t.cpu_s = cpu_s() - cpu0;
  check(got, want, a.variant);
  t.objects = got.samples;
  t.bytes = got.bytes;
  return t;
}

Timed pack(const Args& a, const std::shared_ptr<dataflux::ObjectStore>& store) {
  dataflux::PackOptions options;
  options.source_store = store;
  options.writer.store = store;
  if (a.shard_size != 0) options.writer.max_size = a.shard_size;
  Timed t;
  const double cpu0 = cpu_s();
  const auto t0 = Clock::now();
  auto packed = dataflux::pack_objects(url_of(a, a.prefix), url_of(a, a.dest + "train"), options);
  t.wall_s = seconds_since(t0);
  t.cpu_s = cpu_s() - cpu0;
  if (!packed.ok()) die("pack: " + packed.status().ToString());
  std::uint64_t shard_bytes = 0;
  for (const auto& s : packed->shards) shard_bytes += s.size;
  t.objects = packed->samples;
  t.bytes = packed->bytes;
  t.extra = ", \"shards\": " + std::to_string(packed->shards.size()) +
            ", \"shard_bytes\": " + std::to_string(shard_bytes) +
            ", \"classes\": " + std::to_string(packed->classes.size());
  return t;
}

// ---- text ------------------------------------------------------------------------------------

// Object i: P/part-{i}.txt, lines of 1,200..2,000 letters and spaces, as many as fit `size`.
std::string make_text(const std::string& prefix, std::size_t size, std::size_t i,
                      std::string* bytes) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz     ";  // 31 letters
  std::mt19937_64 rng(1000003 + i);
  bytes->clear();
  bytes->reserve(size);
  while (true) {
    const std::size_t length = 1200 + rng() % 801;
    if (bytes->size() + length + 1 > size) break;
    for (std::size_t k = 0; k < length; k += 8) {
      std::uint64_t v = rng();
      for (std::size_t j = k; j < std::min(length, k + 8); ++j, v >>= 8) {
        bytes->push_back(kAlphabet[(v & 0xff) % 31]);
      }
    }
    bytes->push_back('\n');
  }
  char name[32];
  std::snprintf(name, sizeof(name), "part-%05zu.txt", i);
  return prefix + name;
}

struct LineTally {
  std::mutex mu;
  std::uint64_t lines = 0, line_bytes = 0;
  void add(const std::vector<torch::data::Example<>>& batch) {
    std::uint64_t n = 0;
    for (const auto& e : batch) n += static_cast<std::uint64_t>(e.data.numel());
    std::lock_guard<std::mutex> lock(mu);
    lines += batch.size();
    line_bytes += n;
  }
};

// The baselines' work on one object: one GET of it whole into a uint8 tensor, then its lines
// as Examples (a view of the line, its number), handed on in batches.
void get_and_split(dataflux::ObjectStore& store, const Args& a, const dataflux::ObjectEntry& o,
                   LineTally* tally) {
  at::Tensor text = at::empty({static_cast<std::int64_t>(o.size)}, at::kByte);
  dataflux::ReadObjectRequest request;
  request.bucket = a.bucket;
  request.object = o.name;
  auto result = store.read_object(request, static_cast<char*>(text.data_ptr()), o.size);
  if (!result.ok()) throw dataflux::Error(result.status());
  const char* data = static_cast<const char*>(text.data_ptr());
  std::vector<torch::data::Example<>> batch;
  std::int64_t line = 0;
  for (std::size_t start = 0; start < o.size;) {
    const void* nl = std::memchr(data + start, '\n', o.size - start);
    const std::size_t end =
        nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - data) : o.size;
    if (end > start) {
      batch.push_back(
          {text.narrow(0, static_cast<std::int64_t>(start), static_cast<std::int64_t>(end - start)),
           at::scalar_tensor(line, at::kLong)});
    }
    ++line;
    start = end + 1;
    if (batch.size() == a.batch) {
      tally->add(batch);
      batch.clear();
    }
  }
  if (!batch.empty()) tally->add(batch);
}

Timed text(const Args& a, const std::shared_ptr<dataflux::ObjectStore>& store) {
  const auto s0 = Clock::now();
  auto objects = dataflux::value_or_throw(
      dataflux::internal::list_dataset_objects(*store, a.bucket, a.prefix));
  std::uint64_t total = 0;
  for (const auto& o : objects) total += o.size;
  Timed t;
  LineTally tally;
  double cpu0 = 0;
  Clock::time_point t0;
  auto start = [&] {
    t.setup_s = seconds_since(s0);
    cpu0 = cpu_s();
    t0 = Clock::now();
  };
  if (a.variant == "text-sequential") {
    start();
    for (const auto& o : objects) get_and_split(*store, a, o, &tally);
  } else if (a.variant == "text-threads") {
    start();
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mu;
    std::vector<std::thread> threads;
    for (std::size_t k = 0; k < a.threads; ++k) {
      threads.emplace_back([&] {
        try {
          for (std::size_t i; (i = next++) < objects.size();) {
            get_and_split(*store, a, objects[i], &tally);
          }
        } catch (...) {
          std::lock_guard<std::mutex> lock(failure_mu);
          failure = std::current_exception();
        }
      });
    }
    for (auto& th : threads) th.join();
    if (failure) std::rethrow_exception(failure);
  } else {  // text-lines
    dataflux::LineDataset lines(url_of(a, a.prefix), dataflux::LineDatasetOptions().store(store));
    start();
    while (auto batch = lines.get_batch(a.batch)) {
      if (t.first_batch_s < 0) t.first_batch_s = seconds_since(t0);
      tally.add(*batch);
    }
  }
  t.wall_s = seconds_since(t0);
  t.cpu_s = cpu_s() - cpu0;
  t.objects = tally.lines;
  t.bytes = total;
  t.extra = ", \"text_objects\": " + std::to_string(objects.size()) +
            ", \"line_bytes\": " + std::to_string(tally.line_bytes);
  return t;
}

}  // namespace

int main(int argc, char** argv) try {
  Args a = parse(argc, argv);
  auto store = open_bench_store(a);
  if (a.variant == "prepare-images" || a.variant == "prepare-text") {
    std::uint64_t bytes = 0, lines = 0;
    std::mutex mu;
    upload_all(*store, a, a.count, [&](std::size_t i, std::string* data) {
      std::string name = a.variant == "prepare-images" ? make_image(a.prefix, i, data)
                                                       : make_text(a.prefix, a.size, i, data);
      std::uint64_t n = 0;
      if (a.variant == "prepare-text") {
        for (char c : *data) n += c == '\n';
      }
      std::lock_guard<std::mutex> lock(mu);
      bytes += data->size();
      lines += n;
      return name;
    });
    std::printf("{\"objects\": %zu, \"bytes\": %llu, \"lines\": %llu}\n", a.count,
                static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(lines));
    return 0;
  }
  Timed t;
  if (a.variant == "pack")
    t = pack(a, store);
  else if (a.variant == "images-blocking" || a.variant == "images-loose" ||
           a.variant == "images-shards")
    t = images(a, store);
  else if (a.variant == "text-sequential" || a.variant == "text-threads" ||
           a.variant == "text-lines")
    t = text(a, store);
  else
    die("unknown variant " + a.variant);
  std::printf(
      "{\"objects\": %zu, \"bytes\": %llu, \"wall_s\": %.4f, \"peak_rss_mb\": %.1f, "
      "\"cpu_s\": %.3f, \"setup_s\": %.4f, \"first_batch_s\": %.4f%s}\n",
      t.objects, static_cast<unsigned long long>(t.bytes), t.wall_s, peak_rss_mb(), t.cpu_s,
      t.setup_s, t.first_batch_s, t.extra.c_str());
  return 0;
} catch (const std::exception& e) {
  std::cerr << "dataflux_bench_shards: " << e.what() << "\n";
  return 1;
}
