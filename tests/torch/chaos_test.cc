// The chaos test: on gs:// and s3://, an epoch of each dataset and a ~64 MiB checkpoint in
// several parts, saved and loaded, while the emulator gives ~5% of all requests a fault of
// every kind it has (429, 503, reset, break after K bytes, stall, lost reply after the write
// was applied, and on reads a 200 to a ranged GET, a shifted or an overlong 206). Every
// sample and the checkpoint must be byte-exact, and after cleanup no temporary may be left.
// The seed is fixed and printed with the faults it produced, so a failure can be replayed.
#include <torch/data/dataloader.h>
#include <torch/data/samplers/random.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backends.h"
#include "dataflux/checkpoint.h"
#include "dataflux/dataset.h"
#include "dataflux/fetch.h"
#include "dataflux/gcs.h"
#include "emulator/emulator.h"

namespace dataflux {
namespace {

constexpr std::uint64_t kSeed = 20261123;  // printed; change it to explore other fault orders
constexpr double kFaultProbability = 0.05;

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

class ChaosTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    emulator::EmulatorOptions options;
    options.threads = 128;  // stalled replies hold a worker each
    testing::enable_test_s3(options);
    emu_ = emulator::Emulator::start(options).value().release();
  }
  static void TearDownTestSuite() {
    delete emu_;
    emu_ = nullptr;
  }

  void SetUp() override {
    emu_->set_chaos({});
    emu_->clear_faults();
    bucket_ = "chaos-" + GetParam();
    ASSERT_TRUE(emu_->create_bucket(bucket_).ok());
    // What a job would set for a flaky network, scaled down: quick backoff, a stall noticed
    // in 1 s (the emulator's stalls last 2 s), more attempts than the default.
    RetryOptions retry;
    retry.max_attempts = 12;
    retry.initial_backoff = std::chrono::milliseconds(2);
    retry.max_backoff = std::chrono::milliseconds(50);
    retry.deadline = std::chrono::seconds(30);
    TransportOptions transport;
    transport.stall_timeout = std::chrono::seconds(1);
    if (GetParam() == "gcs") {
      GcsOptions o;
      o.endpoint = emu_->endpoint();
      o.anonymous = true;
      o.retry = retry;
      o.transport = transport;
      store_ = make_gcs_store(o).value();
    } else {
      S3Options o = testing::test_s3_options(*emu_);
      o.retry = retry;
      o.transport = transport;
      store_ = make_s3_store(o).value();
    }
  }

  std::string url(const std::string& name) const {
    return GetParam() + "://" + bucket_ + "/" + name;
  }

  std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const auto& o : emu_->list_objects(bucket_)) out.push_back(o.name);
    return out;
  }

  static emulator::Emulator* emu_;
  std::string bucket_;
  std::shared_ptr<ObjectStore> store_;
};

emulator::Emulator* ChaosTest::emu_ = nullptr;

void collect(const std::vector<torch::data::Example<>>& batch,
             std::map<std::int64_t, std::string>* seen) {
  for (const auto& example : batch) {
    const auto index = example.target.item<std::int64_t>();
    std::string bytes(static_cast<const char*>(example.data.data_ptr()),
                      static_cast<std::size_t>(example.data.numel()));
    EXPECT_TRUE(seen->emplace(index, std::move(bytes)).second) << "duplicate sample " << index;
  }
}

void expect_exact(const std::map<std::int64_t, std::string>& seen,
                  const std::vector<std::string>& data, const char* what) {
  ASSERT_EQ(seen.size(), data.size()) << what;
  for (std::size_t i = 0; i < data.size(); ++i) {
    ASSERT_EQ(seen.count(static_cast<std::int64_t>(i)), 1u) << what << ": lost sample " << i;
    ASSERT_EQ(seen.at(static_cast<std::int64_t>(i)), data[i]) << what << ": sample " << i;
  }
}

TEST_P(ChaosTest, DatasetsAndACheckpointStayExactUnderFaultsOfEveryKind) {
  // The data goes up before the chaos starts: samples of up to 48 KiB, some larger than the
  // ranges a sample is read in, so ranged and whole reads both meet faults.
  std::vector<std::string> data;
  std::mt19937_64 sizes(kSeed);
  for (int i = 0; i < 240; ++i) {
    data.push_back(random_bytes(1 + sizes() % (48 << 10), kSeed + i));
    char name[32];
    std::snprintf(name, sizeof(name), "data/%05d", i);
    WriteObjectRequest request;
    request.bucket = bucket_;
    request.object = name;
    auto written = store_->write_object(request, data.back());
    ASSERT_TRUE(written.ok()) << written.status();
  }
  torch::manual_seed(static_cast<std::uint64_t>(kSeed));
  const torch::Tensor weights =
      torch::randint(0, 256, {64 << 20}, torch::TensorOptions().dtype(torch::kUInt8));

  emulator::ChaosOptions chaos;
  chaos.probability = kFaultProbability;
  chaos.seed = kSeed;
  chaos.stall = absl::Seconds(2);
  emu_->set_chaos(chaos);
  // Writes are few next to reads, so on top of the random faults, the checkpoint's part
  // uploads and its publishing meet each write fault at least once, deterministically.
  const bool gcs = GetParam() == "gcs";
  for (const char* op : {gcs ? "objects.insert" : "s3.upload_part",
                         gcs ? "objects.compose" : "s3.complete_multipart"}) {
    emu_->inject_fault(op, emulator::Fault::lost_reply());
    emu_->inject_fault(op, emulator::Fault::status(503));
    emu_->inject_fault(op, emulator::Fault::reset());
    emu_->inject_fault(op, emulator::Fault::stall(absl::Seconds(2)));
  }

  DatasetOptions options;
  options.store(store_).range_size(16 << 10);  // larger samples come in several ranges
  {
    SCOPED_TRACE("MapDataset");
    auto loader =
        torch::data::make_data_loader(MapDataset(url("data/"), options),
                                      torch::data::DataLoaderOptions().batch_size(24).workers(2));
    std::map<std::int64_t, std::string> seen;
    for (auto& batch : *loader) collect(batch, &seen);
    expect_exact(seen, data, "MapDataset");
  }
  {
    SCOPED_TRACE("StreamingDataset");
    // On gs://, forced compose: batches of small objects go through composites too.
    auto streaming =
        StreamingDataset(url("data/"), DatasetOptions(options).prefetch(32).force_compose(gcs));
    std::map<std::int64_t, std::string> seen;
    while (auto batch = streaming.get_batch(20)) collect(*batch, &seen);
    expect_exact(seen, data, "StreamingDataset");
  }

  CheckpointOptions ckpt;
  ckpt.store = store_;
  ckpt.upload.part_size = 8 << 20;  // 8 parts (the emulator, as S3, wants 5 MiB or more)
  ckpt.upload.max_parts_in_flight = 4;
  ckpt.range_size = 4 << 20;  // 16 ranged GETs
  ckpt.max_requests_in_flight = 8;
  save(weights, url("ckpt/weights.pt"), ckpt);
  torch::Tensor back;
  load(back, url("ckpt/weights.pt"), ckpt);
  EXPECT_TRUE(torch::equal(back, weights)) << "the checkpoint came back different";

  emu_->set_chaos({});
  const auto counts = emu_->chaos_counts();
  std::uint64_t total = 0;
  std::printf("chaos on %s, seed %llu, p=%.2f: faults injected by kind:\n", GetParam().c_str(),
              static_cast<unsigned long long>(kSeed), kFaultProbability);
  for (const auto& [kind, n] : counts) {
    std::printf("  %-22s %llu\n", kind.c_str(), static_cast<unsigned long long>(n));
    total += n;
  }
  std::printf("  %-22s %llu\n", "total", static_cast<unsigned long long>(total));
  std::printf(
      "  and 8 on the checkpoint's writes: lost reply, 503, reset, stall on its part\n"
      "  uploads and on its publishing (compose / CompleteMultipartUpload)\n");
  EXPECT_GE(counts.size(), 6u) << "too few kinds met: the run proves less than it claims";
  for (const char* op :
       {"objects.insert", "objects.compose", "s3.upload_part", "s3.complete_multipart"}) {
    EXPECT_EQ(emu_->pending_faults(op), 0u) << op << ": an injected fault was never met";
  }

  CleanupOptions clean;
  clean.min_age = std::chrono::seconds(0);
  ASSERT_TRUE(cleanup(*store_, bucket_, clean).ok());
  std::set<std::string> expected;
  for (int i = 0; i < 240; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "data/%05d", i);
    expected.insert(name);
  }
  expected.insert("ckpt/weights.pt");
  const auto left = names();
  EXPECT_EQ(std::set<std::string>(left.begin(), left.end()), expected);
  auto pending = store_->list_pending_uploads(bucket_, "");
  ASSERT_TRUE(pending.ok()) << pending.status();
  EXPECT_TRUE(pending->empty()) << pending->size() << " unfinished uploads left";
}

INSTANTIATE_TEST_SUITE_P(Backends, ChaosTest, ::testing::Values("gcs", "s3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace dataflux
