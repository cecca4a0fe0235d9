// MapDataset and StreamingDataset through libtorch's DataLoaders, on the embedded default
// (file://) and on GCS and S3 (the emulator): byte-exact samples, no loss or duplicate, faults,
// composites always deleted, partitioning, and exact resume.
#include "dataflux/dataset.h"

#include <ATen/ops/equal.h>
#include <torch/data/dataloader.h>
#include <torch/data/datasets/shared.h>
#include <torch/data/samplers/distributed.h>
#include <torch/data/samplers/random.h>
#include <torch/data/samplers/sequential.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backends.h"
#include "dataflux/gcs.h"
#include "dataflux/local.h"
#include "emulator/emulator.h"

namespace dataflux {
namespace {

using ::testing::HasSubstr;

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

std::string as_string(const at::Tensor& bytes) {
  return std::string(static_cast<const char*>(bytes.data_ptr()), bytes.numel());
}

class DatasetTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    emulator::EmulatorOptions options;
    options.threads = 128;
    testing::enable_test_s3(options);
    emu_ = emulator::Emulator::start(options).value().release();
  }
  static void TearDownTestSuite() {
    delete emu_;
    emu_ = nullptr;
  }

  void SetUp() override {
    emu_->clear_faults();
    emu_->reset_counters();
    if (gcs()) {
      static std::atomic<int> counter{0};
      bucket_ = "ds-" + std::to_string(counter++);
      ASSERT_TRUE(emu_->create_bucket(bucket_).ok());
      GcsOptions options;
      options.endpoint = emu_->endpoint();
      options.anonymous = true;
      options.retry.max_attempts = 6;
      options.retry.initial_backoff = std::chrono::milliseconds(1);
      options.retry.max_backoff = std::chrono::milliseconds(10);
      options.transport.connect_timeout = std::chrono::seconds(5);  // its own transport
      store_ = make_gcs_store(options).value();
      url_ = "gs://" + bucket_ + "/data/";
    } else if (GetParam() == "s3") {
      static std::atomic<int> counter{0};
      bucket_ = "ds3-" + std::to_string(counter++);
      ASSERT_TRUE(emu_->create_bucket(bucket_).ok());
      store_ = make_s3_store(testing::test_s3_options(*emu_, 6)).value();
      url_ = "s3://" + bucket_ + "/data/";
    } else {
      char tmpl[] = "/tmp/dataflux_dataset_XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      dir_ = tmpl;
      bucket_ = dir_;
      store_ = make_local_store(dir_, LocalOptions{false}).value();
      url_ = "file://" + dir_ + "/data/";
    }
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  bool gcs() const { return GetParam() == "gcs"; }
  bool emulated() const { return GetParam() != "local"; }

  // `count` objects data/00000... of 0..max_size bytes; their bytes in name order.
  std::vector<std::string> put_many(int count, std::size_t max_size) {
    std::vector<std::string> out;
    std::mt19937_64 rng(count);
    for (int i = 0; i < count; ++i) {
      out.push_back(random_bytes(1 + rng() % max_size, i));
      char name[32];
      std::snprintf(name, sizeof(name), "data/%05d", i);
      WriteObjectRequest request;
      request.bucket = bucket_;
      request.object = name;
      EXPECT_TRUE(store_->write_object(request, out.back()).ok());
    }
    return out;
  }

  // Options that reach this test's store: the emulator for gs:// and s3://; open_store for file://.
  DatasetOptions options() const {
    DatasetOptions o;
    if (emulated()) o.store(store_);
    return o;
  }

  std::size_t composites_left() {
    if (!gcs()) return 0;
    std::size_t n = 0;
    for (const auto& o : emu_->list_objects(bucket_)) {
      n += o.name.rfind(kComposedObjectsPrefix, 0) == 0;
    }
    return n;
  }

  static emulator::Emulator* emu_;
  std::string dir_, bucket_, url_;
  std::shared_ptr<ObjectStore> store_;
};

emulator::Emulator* DatasetTest::emu_ = nullptr;

// Collects (index -> bytes) from batches of default examples, failing on duplicates.
void collect(const std::vector<torch::data::Example<>>& batch,
             std::map<std::int64_t, std::string>* seen) {
  for (const auto& example : batch) {
    EXPECT_EQ(example.data.scalar_type(), at::kByte);
    auto index = example.target.item<std::int64_t>();
    EXPECT_TRUE(seen->emplace(index, as_string(example.data)).second) << "duplicate " << index;
  }
}

void expect_all(const std::map<std::int64_t, std::string>& seen,
                const std::vector<std::string>& data) {
  ASSERT_EQ(seen.size(), data.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    ASSERT_EQ(seen.count(i), 1u) << "lost " << i;
    EXPECT_EQ(seen.at(i), data[i]) << "sample " << i;
  }
}

TEST_P(DatasetTest, MapDatasetListsAndFetchesBatchesByteExact) {
  auto data = put_many(20, 5000);
  MapDataset dataset(url_, options());
  ASSERT_EQ(dataset.size().value(), 20u);
  EXPECT_THAT(dataset.objects()[3].name, HasSubstr("data/00003"));
  EXPECT_EQ(dataset.objects()[3].size, data[3].size());
  std::vector<size_t> indices = {7, 0, 19, 7};
  auto batch = dataset.get_batch(indices);
  ASSERT_EQ(batch.size(), 4u);
  for (std::size_t k = 0; k < indices.size(); ++k) {
    EXPECT_EQ(as_string(batch[k].data), data[indices[k]]);
    EXPECT_EQ(batch[k].target.item<std::int64_t>(), static_cast<std::int64_t>(indices[k]));
  }
  EXPECT_EQ(as_string(dataset.get(5).data), data[5]);
  try {
    dataset.get(20);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), absl::StatusCode::kOutOfRange);
  }
}

TEST_P(DatasetTest, SamplesAboveTheRangeSizeArriveByteExactFromParallelRanges) {
  auto data = put_many(6, 50001);  // 13 ranges of 4 KiB each
  MapDataset map(url_, options().range_size(4096));
  auto batch = map.get_batch({5, 0, 3});
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(as_string(batch[0].data), data[5]);
  EXPECT_EQ(as_string(batch[1].data), data[0]);
  EXPECT_EQ(as_string(batch[2].data), data[3]);
  StreamingDataset stream(url_, options().range_size(4096));
  std::map<std::int64_t, std::string> seen;
  while (auto b = stream.get_batch(4)) {
    for (auto& e : *b) seen[e.target.item<std::int64_t>()] = as_string(e.data);
  }
  expect_all(seen, data);
}

TEST_P(DatasetTest, MapDatasetThroughAMultiWorkerDataLoaderSeesEverySampleOnce) {
  auto data = put_many(150, 3000);
  auto loader = torch::data::make_data_loader(
      MapDataset(url_, options()), torch::data::DataLoaderOptions().batch_size(16).workers(3));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::map<std::int64_t, std::string> seen;
    for (auto& batch : *loader) collect(batch, &seen);
    expect_all(seen, data);
  }
}

TEST_P(DatasetTest, MapDatasetReadsSequentialBatchesAheadAndEachObjectOnce) {
  auto data = put_many(40, 3000);
  MapDataset dataset(url_, options().prefetch(16));
  auto check = [&](const std::vector<torch::data::Example<>>& batch, size_t first) {
    for (size_t k = 0; k < batch.size(); ++k) EXPECT_EQ(as_string(batch[k].data), data[first + k]);
  };
  // Reads start synchronously within get_batch, so the counts below are exact.
  check(dataset.get_batch(std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7}), 0);
  EXPECT_EQ(dataset.fetch_stats().direct_reads, 8u + 16u);  // the batch, then 16 ahead
  for (size_t first = 8; first < 40; first += 8) {
    std::vector<size_t> indices;
    for (size_t i = first; i < first + 8; ++i) indices.push_back(i);
    check(dataset.get_batch(indices), first);
  }
  EXPECT_EQ(dataset.fetch_stats().direct_reads, 40u);  // each object once
  // The next pass starts over at 0 and reads ahead again.
  check(dataset.get_batch(std::vector<size_t>{0, 1, 2, 3}), 0);
  EXPECT_EQ(dataset.fetch_stats().direct_reads, 40u + 4u + 16u);
}

TEST_P(DatasetTest, MapDatasetReadsNothingAheadForRandomIndices) {
  auto data = put_many(40, 3000);
  MapDataset dataset(url_, options().prefetch(16));
  auto batch = dataset.get_batch(std::vector<size_t>{17, 3, 29});
  EXPECT_EQ(dataset.fetch_stats().direct_reads, 3u);
  EXPECT_EQ(as_string(batch[1].data), data[3]);
  for (size_t i : {33u, 5u, 21u}) EXPECT_EQ(as_string(dataset.get(i).data), data[i]);
  EXPECT_EQ(dataset.fetch_stats().direct_reads, 6u);
}

TEST_P(DatasetTest, MapDatasetCopiesShareOneReadAheadAcrossLoaderWorkers) {
  auto data = put_many(150, 3000);
  MapDataset dataset(url_, options());
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      dataset, torch::data::DataLoaderOptions().batch_size(16).workers(3));
  for (std::uint64_t epoch = 1; epoch <= 2; ++epoch) {
    std::map<std::int64_t, std::string> seen;
    for (auto& batch : *loader) collect(batch, &seen);
    expect_all(seen, data);
    // Whichever worker asks first, no object is read twice in a pass.
    EXPECT_EQ(dataset.fetch_stats().direct_reads, 150u * epoch);
  }
}

TEST_P(DatasetTest, TransformDecodesAndDistributedSamplersSplitTheWork) {
  auto data = put_many(41, 100);
  auto opts = options().transform([](at::Tensor bytes, const ObjectEntry& object, size_t) {
    return torch::data::Example<>{bytes.sum(), at::tensor(static_cast<std::int64_t>(object.size))};
  });
  std::multiset<std::int64_t> sizes;
  for (int rank = 0; rank < 3; ++rank) {
    MapDataset dataset(url_, opts);
    torch::data::samplers::DistributedRandomSampler sampler(dataset.size().value(), 3, rank);
    auto loader = torch::data::make_data_loader(std::move(dataset), std::move(sampler),
                                                torch::data::DataLoaderOptions(8).workers(2));
    for (auto& batch : *loader) {
      for (auto& e : batch) sizes.insert(e.target.item<std::int64_t>());
    }
  }
  std::multiset<std::int64_t> expected;
  for (const auto& d : data) expected.insert(static_cast<std::int64_t>(d.size()));
  // DistributedRandomSampler pads to a multiple of the world size: 41 -> 42.
  EXPECT_EQ(sizes.size(), 42u);
  for (auto s : expected) EXPECT_GE(sizes.count(s), expected.count(s));
}

TEST_P(DatasetTest, NothingUnderThePrefixIsAClearError) {
  put_many(2, 10);
  try {
    MapDataset dataset(url_ + "nope/", options());
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("nope/"));
  }
}

TEST_P(DatasetTest, StreamingDatasetThroughTheStatefulLoaderThenNulloptForever) {
  auto data = put_many(70, 3000);
  auto dataset = torch::data::datasets::make_shared_dataset<StreamingDataset>(
      url_, options().shuffle(true).seed(5).prefetch(16));
  auto loader =
      torch::data::make_data_loader(dataset, torch::data::DataLoaderOptions(8).workers(3));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::map<std::int64_t, std::string> seen;
    for (auto& batch : *loader) collect(batch, &seen);
    expect_all(seen, data);
    EXPECT_EQ(dataset->epoch(), static_cast<std::uint64_t>(epoch));
  }
  for (int k = 0; k < 5; ++k) EXPECT_FALSE(dataset->get_batch(8).has_value());
}

TEST_P(DatasetTest, ShuffledOrderIsAFunctionOfSeedAndEpoch) {
  put_many(30, 10);
  StreamingDataset a(url_, options().shuffle(true).seed(1));
  StreamingDataset b(url_, options().shuffle(true).seed(1));
  StreamingDataset c(url_, options().shuffle(true).seed(2));
  EXPECT_EQ(a.epoch_order(), b.epoch_order());
  EXPECT_NE(a.epoch_order(), c.epoch_order());
  auto first = a.epoch_order();
  a.reset();  // the first reset keeps epoch 0 (the DataLoader calls it at every begin)
  EXPECT_EQ(a.epoch(), 0u);
  a.reset();
  EXPECT_EQ(a.epoch(), 1u);
  EXPECT_NE(a.epoch_order(), first);
  b.set_epoch(1);
  EXPECT_EQ(a.epoch_order(), b.epoch_order());
}

TEST_P(DatasetTest, RanksAreDisjointAndTogetherComplete) {
  put_many(37, 10);
  for (int world : {1, 2, 3, 8}) {
    std::vector<int> hits(37, 0);
    std::size_t biggest = 0, smallest = 37;
    for (int rank = 0; rank < world; ++rank) {
      StreamingDataset d(url_, options().shuffle(true).seed(9).rank(rank).world_size(world));
      std::size_t n = 0;
      while (auto batch = d.get_batch(5)) {
        for (auto& e : *batch) ++hits.at(e.target.item<std::int64_t>());
        n += batch->size();
      }
      EXPECT_EQ(n, d.size().value());
      biggest = std::max(biggest, n);
      smallest = std::min(smallest, n);
    }
    for (int i = 0; i < 37; ++i) EXPECT_EQ(hits[i], 1) << "world " << world << " sample " << i;
    EXPECT_LE(biggest - smallest, 1u);
  }
}

TEST_P(DatasetTest, RankAndWorldSizeComeFromTheEnvironment) {
  put_many(10, 10);
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "4", 1);
  StreamingDataset d(url_, options());
  EXPECT_EQ(d.rank(), 1);
  EXPECT_EQ(d.world_size(), 4);
  EXPECT_EQ(d.size().value(), 3u);  // positions 1, 5, 9
  setenv("RANK", "4", 1);
  EXPECT_THROW(StreamingDataset(url_, options()), Error);
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
}

TEST_P(DatasetTest, ResumeMidEpochContinuesWithExactlyTheUnseenSamplesInOrder) {
  put_many(53, 200);
  auto opts = options().shuffle(true).seed(77).prefetch(8);
  auto order_of = [](StreamingDataset& d, std::size_t batch, std::size_t max_batches) {
    std::vector<std::int64_t> out;
    for (std::size_t b = 0; b < max_batches; ++b) {
      auto next = d.get_batch(batch);
      if (!next) break;
      for (auto& e : *next) out.push_back(e.target.item<std::int64_t>());
    }
    return out;
  };
  // Batches before the "crash": the first, the middle and the last but one of 14 (fixed, so a
  // failure is reproduced by running the test again).
  for (std::size_t stop : {1, 7, 13}) {
    StreamingDataset full(url_, opts);
    full.set_epoch(1);
    auto expected = order_of(full, 4, 1000);
    ASSERT_EQ(expected.size(), 53u);

    std::stringstream saved;
    std::vector<std::int64_t> got;
    {
      StreamingDataset first(url_, opts);
      first.set_epoch(1);
      got = order_of(first, 4, stop);
      torch::serialize::OutputArchive archive;
      first.save(archive);
      archive.save_to(saved);
    }  // destroyed mid-epoch with reads in flight
    StreamingDataset second(url_, opts);
    torch::serialize::InputArchive archive;
    archive.load_from(saved);
    second.load(archive);
    second.reset();  // what the DataLoader does first: must not skip ahead
    auto rest = order_of(second, 4, 1000);
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_EQ(got, expected) << "stopped after " << stop << " batches";
  }
}

TEST_P(DatasetTest, LoadRefusesAStateFromAnotherPartition) {
  put_many(10, 10);
  StreamingDataset a(url_, options().rank(0).world_size(2));
  torch::serialize::OutputArchive out;
  a.save(out);
  std::stringstream saved;
  out.save_to(saved);
  StreamingDataset b(url_, options().rank(1).world_size(2));
  torch::serialize::InputArchive in;
  in.load_from(saved);
  try {
    b.load(in);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("rank"));
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, DatasetTest, ::testing::Values("local", "gcs", "s3"));

// GCS only: faults and compose temporaries.
class DatasetGcsTest : public DatasetTest {};

TEST_P(DatasetGcsTest, ByteExactUnderFaultsWithNoSampleLostOrDuplicated) {
  auto data = put_many(200, 4000);
  for (int k = 0; k < 10; ++k) emu_->inject_fault("objects.media", emulator::Fault::status(503));
  emu_->inject_fault("objects.media", emulator::Fault::reset());
  emu_->inject_fault("objects.media", emulator::Fault::break_after(100));
  for (bool compose : {false, true}) {
    auto loader =
        torch::data::make_data_loader(MapDataset(url_, options().force_compose(compose)),
                                      torch::data::DataLoaderOptions().batch_size(40).workers(2));
    std::map<std::int64_t, std::string> seen;
    for (auto& batch : *loader) collect(batch, &seen);
    expect_all(seen, data);
    auto streaming = StreamingDataset(url_, options().force_compose(compose).prefetch(64));
    seen.clear();
    while (auto batch = streaming.get_batch(33)) collect(*batch, &seen);
    expect_all(seen, data);
  }
  EXPECT_EQ(composites_left(), 0u);
}

TEST_P(DatasetGcsTest, NoCompositeLeftAfterATransformThrows) {
  put_many(64, 1000);
  auto opts = options().force_compose(true).transform(
      [](at::Tensor, const ObjectEntry& object, size_t) -> torch::data::Example<> {
        throw std::runtime_error("cannot decode " + object.name);
      });
  auto loader = torch::data::make_data_loader(MapDataset(url_, opts),
                                              torch::data::DataLoaderOptions(32).workers(2));
  EXPECT_ANY_THROW({
    for (auto& batch : *loader) (void)batch;
  });
  // Read-ahead of later batches may still be composing while the dataset lives; each
  // composite goes as its read completes, and none outlives the dataset.
  loader.reset();
  EXPECT_GT(emu_->request_count("objects.compose"), 0u);
  EXPECT_EQ(composites_left(), 0u);
}

TEST_P(DatasetGcsTest, NoCompositeLeftAfterTheDatasetIsDestroyedMidEpoch) {
  put_many(300, 2000);
  {
    StreamingDataset d(url_, options().force_compose(true).prefetch(256));
    ASSERT_TRUE(d.get_batch(10).has_value());
  }  // compose batches still in flight
  EXPECT_GT(emu_->request_count("objects.compose"), 0u);
  EXPECT_EQ(composites_left(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Gcs, DatasetGcsTest, ::testing::Values("gcs"));

}  // namespace
}  // namespace dataflux
