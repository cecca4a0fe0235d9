// dataflux::save / load, CheckpointIO and AsyncCheckpointer on gs:// and s3:// (the emulator)
// and file://: bit-exact model and optimizer round trips, faults, corruption, atomic publish.
#include "dataflux/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backends.h"
#include "core/thread_pool.h"
#include "dataflux/gcs.h"
#include "emulator/emulator.h"

namespace dataflux {
namespace {

using ::testing::HasSubstr;

torch::nn::Sequential make_model(int seed) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(256, 512), torch::nn::ReLU(),
                               torch::nn::Linear(512, 10));  // ~540 KB of floats
}

// Adam's per-parameter state, in parameter order (the archive's entry order is not stable).
std::vector<torch::Tensor> adam_state(torch::optim::Adam& adam) {
  std::vector<torch::Tensor> out;
  for (const auto& p : adam.param_groups()[0].params()) {
    auto it = adam.state().find(c10::guts::to_string(p.unsafeGetTensorImpl()));
    if (it == adam.state().end()) continue;
    auto& s = static_cast<torch::optim::AdamParamState&>(*it->second);
    out.push_back(s.exp_avg());
    out.push_back(s.exp_avg_sq());
    out.push_back(torch::tensor(s.step()));
  }
  return out;
}

void expect_same_tensors(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
}

void expect_same_parameters(const torch::nn::Sequential& a, const torch::nn::Sequential& b) {
  auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& item : pa) EXPECT_TRUE(torch::equal(item.value(), pb[item.key()])) << item.key();
}

class CheckpointTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/dataflux-ckpt-emu-XXXXXX";
    emu_dir_ = mkdtemp(tmpl);
    emulator::EmulatorOptions options;
    options.storage_dir = emu_dir_;  // so a test can corrupt stored bytes
    testing::enable_test_s3(options);
    emu_ = emulator::Emulator::start(options).value().release();
  }
  static void TearDownTestSuite() {
    delete emu_;
    std::filesystem::remove_all(emu_dir_);
  }
  bool gcs() const { return GetParam() == "gcs"; }
  bool s3() const { return GetParam() == "s3"; }
  bool emulated() const { return GetParam() != "local"; }

  void SetUp() override {
    emu_->clear_faults();
    options_.upload.part_size = 64 << 10;  // several parts even for a small model
    options_.upload.max_parts_in_flight = 3;
    options_.range_size = 64 << 10;
    options_.max_requests_in_flight = 4;
    if (gcs()) {
      static std::atomic<int> counter{0};
      bucket_ = "ckpt-" + std::to_string(counter++);
      ASSERT_TRUE(emu_->create_bucket(bucket_).ok());
      GcsOptions g;
      g.endpoint = emu_->endpoint();
      g.anonymous = true;
      g.retry.max_attempts = 4;
      g.retry.initial_backoff = std::chrono::milliseconds(1);
      g.retry.max_backoff = std::chrono::milliseconds(5);
      options_.store = make_gcs_store(g).value();
    } else if (s3()) {
      static std::atomic<int> counter{0};
      bucket_ = "ckpt3-" + std::to_string(counter++);
      ASSERT_TRUE(emu_->create_bucket(bucket_).ok());
      options_.store = make_s3_store(testing::test_s3_options(*emu_, 4)).value();
    } else {
      char tmpl[] = "/tmp/dataflux-ckpt-XXXXXX";
      dir_ = mkdtemp(tmpl);
    }
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string url(const std::string& name) const {
    if (gcs()) return "gs://" + bucket_ + "/" + name;
    if (s3()) return "s3://" + bucket_ + "/" + name;
    return "file://" + dir_ + "/" + name;
  }
  // Every stored name (local: every file, temporary ones included).
  std::vector<std::string> all_names() const {
    std::vector<std::string> names;
    if (emulated()) {
      for (const auto& o : emu_->list_objects(bucket_)) names.push_back(o.name);
    } else {
      for (const auto& e : std::filesystem::recursive_directory_iterator(dir_)) {
        if (e.is_regular_file()) names.push_back(std::filesystem::relative(e.path(), dir_));
      }
    }
    return names;
  }
  // Flips one stored byte, keeping size and mtime (bit rot). False when it cannot.
  bool corrupt(const std::string& name, std::size_t at) {
    std::string path = dir_ + "/" + name;
    if (emulated()) {  // the emulator's file holding exactly these bytes
      const std::string data = emu_->get_object_data(bucket_, name).value();
      path.clear();
      for (const auto& e : std::filesystem::directory_iterator(emu_dir_)) {
        std::ifstream in(e.path(), std::ios::binary);
        if (std::string((std::istreambuf_iterator<char>(in)), {}) == data) path = e.path();
      }
    }
    struct stat st;
    if (path.empty() || stat(path.c_str(), &st) != 0) return false;
    int fd = open(path.c_str(), O_RDWR);
    char c;
    bool ok = pread(fd, &c, 1, at) == 1;
    c ^= 0x40;
    ok = ok && pwrite(fd, &c, 1, at) == 1;
    const timespec times[2] = {st.st_atim, st.st_mtim};
    ok = ok && futimens(fd, times) == 0;
    close(fd);
    return ok;
  }

  static emulator::Emulator* emu_;
  static std::string emu_dir_;
  std::string bucket_, dir_;
  CheckpointOptions options_;
};
emulator::Emulator* CheckpointTest::emu_ = nullptr;
std::string CheckpointTest::emu_dir_;

TEST_P(CheckpointTest, ModelAndOptimizerRoundTripBitExact) {
  auto model = make_model(1);
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  model->forward(torch::randn({8, 256})).sum().backward();
  adam.step();
  auto meta = save(model, url("ckpt/model.pt"), options_);
  EXPECT_GT(meta.size, 8u * (64 << 10));  // many parts
  save(adam, url("ckpt/adam.pt"), options_);

  auto restored = make_model(2);
  torch::optim::Adam restored_adam(restored->parameters(), torch::optim::AdamOptions(1e-3));
  ASSERT_TRUE(adam_state(restored_adam).empty());
  load(restored, url("ckpt/model.pt"), options_);
  load(restored_adam, url("ckpt/adam.pt"), options_);
  expect_same_parameters(model, restored);
  ASSERT_EQ(adam_state(adam).size(), 12u);  // 4 parameters x (exp_avg, exp_avg_sq, step)
  expect_same_tensors(adam_state(restored_adam), adam_state(adam));
  EXPECT_THAT(all_names(), ::testing::UnorderedElementsAre("ckpt/model.pt", "ckpt/adam.pt"));
}

TEST_P(CheckpointTest, TensorsAndArchivesRoundTrip) {
  std::vector<torch::Tensor> tensors = {torch::arange(100000, torch::kInt64), torch::randn({3, 5}),
                                        torch::empty({0})};
  save(tensors, url("t.pt"), options_);
  std::vector<torch::Tensor> back;
  load(back, url("t.pt"), options_);
  ASSERT_EQ(back.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(torch::equal(back[i], tensors[i]));

  torch::serialize::OutputArchive out;
  out.write("step", c10::IValue(int64_t{42}));
  out.write("weights", torch::ones({300, 300}));
  save(out, url("archive.pt"), options_);
  torch::serialize::InputArchive in;
  load(in, url("archive.pt"), options_);
  c10::IValue step;
  torch::Tensor weights;
  in.read("step", step);
  in.read("weights", weights);
  EXPECT_EQ(step.toInt(), 42);
  EXPECT_TRUE(torch::equal(weights, torch::ones({300, 300})));
}

TEST_P(CheckpointTest, ACorruptedCheckpointFailsWithDataLoss) {
  auto model = make_model(1);
  save(model, url("bad.pt"), options_);
  if (!corrupt("bad.pt", 100000)) GTEST_SKIP() << "cannot corrupt the stored file here";
  auto store = emulated() ? options_.store : open_store(url("bad.pt")).value();
  auto restored = make_model(2);
  try {
    load(restored, url("bad.pt"), options_);
    // Only a store that keeps no checksum (a filesystem without user xattrs) gets here.
    EXPECT_FALSE(emulated());
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), absl::StatusCode::kDataLoss) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("bad.pt"));
  }
}

// A checkpoint of several parts (S3 multipart, GCS compose) is verified on load against the
// CRC32C the server keeps for the whole object: a byte flipped inside the second part is
// DataLoss before libtorch sees anything.
TEST_P(CheckpointTest, AMultiPartCheckpointIsVerifiedOnLoad) {
  options_.upload.part_size = 5u << 20;  // S3's minimum: 12 MiB go up as 3 parts
  options_.upload.strategy = UploadStrategy::kParts;
  torch::manual_seed(7);
  std::vector<torch::Tensor> saved = {torch::rand({3 << 20})};  // 12 MiB of float32
  save(saved, url("parts.pt"), options_);
  std::vector<torch::Tensor> loaded;
  load(loaded, url("parts.pt"), options_);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_TRUE(torch::equal(loaded[0], saved[0]));
  if (!corrupt("parts.pt", (6u << 20) + 12345)) GTEST_SKIP() << "cannot corrupt the file here";
  try {
    load(loaded, url("parts.pt"), options_);
    EXPECT_FALSE(emulated()) << "a corrupted multi-part checkpoint loaded without error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), absl::StatusCode::kDataLoss) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("parts.pt"));
  }
}

TEST_P(CheckpointTest, MissingAndMismatchedCheckpointsThrowClearErrors) {
  auto model = make_model(1);
  try {
    load(model, url("absent.pt"), options_);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), absl::StatusCode::kNotFound) << e.what();
  }
  save(torch::ones({4}), url("tensor.pt"), options_);
  try {
    load(model, url("tensor.pt"), options_);  // a tensor is not this module
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), absl::StatusCode::kInvalidArgument) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("tensor.pt"));
  }
  EXPECT_THROW(save(model, url("dir/"), options_), Error);
}

// A checkpoint of another architecture: libtorch alone would take other shapes silently and
// ignore extra entries. Strict (the default) names every difference, as load_state_dict does.
TEST_P(CheckpointTest, LoadingAnotherArchitectureFailsNamingTheDifferences) {
  if (GetParam() != "local") GTEST_SKIP() << "independent of the backend";
  torch::manual_seed(3);
  torch::nn::Sequential saved(torch::nn::Linear(8, 16), torch::nn::ReLU(),
                              torch::nn::Linear(16, 4));
  save(saved, url("arch.pt"), options_);

  torch::nn::Sequential same(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 4));
  load(same, url("arch.pt"), options_);  // the same architecture loads, values and all
  expect_same_parameters(saved, same);

  torch::nn::Sequential other(torch::nn::Linear(8, 32), torch::nn::ReLU(), torch::nn::Linear(32, 4),
                              torch::nn::Linear(4, 2));
  const auto before = other->parameters()[0].clone();
  try {
    load(other, url("arch.pt"), options_);
    ADD_FAILURE() << "another architecture loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), absl::StatusCode::kInvalidArgument) << e.what();
    const std::string what = e.what();
    EXPECT_THAT(what, HasSubstr("arch.pt"));
    EXPECT_THAT(what, HasSubstr("0.weight: checkpoint [16, 8], module [32, 8]"));
    EXPECT_THAT(what, HasSubstr("2.weight: checkpoint [4, 16], module [4, 32]"));
    EXPECT_THAT(what, HasSubstr("missing 3"));
    EXPECT_THAT(what, HasSubstr("strict"));
  }
  EXPECT_TRUE(torch::equal(other->parameters()[0], before));  // nothing was half-loaded

  torch::nn::Sequential fewer(torch::nn::Linear(8, 16));
  try {
    load(fewer, url("arch.pt"), options_);
    ADD_FAILURE() << "a smaller architecture loaded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("unexpected 2"));
  }
  CheckpointOptions lenient = options_;
  lenient.strict = false;  // libtorch's own rules: extra entries ignored
  load(fewer, url("arch.pt"), lenient);
  EXPECT_TRUE(torch::equal(fewer->parameters()[0], saved->parameters()[0]));
}

TEST_P(CheckpointTest, AWriterDestroyedWithoutCommitLeavesNothing) {
  {
    CheckpointWriter writer(url("partial.pt"), options_);
    torch::save(make_model(1), writer.writer());
  }
  EXPECT_THAT(all_names(), ::testing::IsEmpty());
}

TEST_P(CheckpointTest, CheckpointIOSavesListsAndRemoves) {
  CheckpointIO io(options_);
  auto model = make_model(3);
  io.save(model, url("run/epoch-1.pt"));
  io.save(model, url("run/epoch-2.pt"));
  EXPECT_TRUE(io.exists(url("run/epoch-1.pt")));
  EXPECT_FALSE(io.exists(url("run/epoch-9.pt")));
  EXPECT_THAT(io.list(url("run/")),
              ::testing::ElementsAre(url("run/epoch-1.pt"), url("run/epoch-2.pt")));
  auto restored = make_model(4);
  io.load(restored, url("run/epoch-2.pt"));
  expect_same_parameters(model, restored);
  EXPECT_TRUE(io.remove(url("run/epoch-1.pt")));
  EXPECT_FALSE(io.remove(url("run/epoch-1.pt")));
  EXPECT_THAT(io.list(url("run/")), ::testing::ElementsAre(url("run/epoch-2.pt")));
}

TEST_P(CheckpointTest, AsyncSaveSnapshotsSoTrainingMayMutateAtOnce) {
  auto model = make_model(5);
  auto expected = make_model(6);
  {
    torch::NoGradGuard guard;
    for (auto& item : expected->named_parameters()) {
      item.value().copy_(model->named_parameters()[item.key()]);
    }
  }
  AsyncCheckpointer async(options_);
  auto first = async.save(model, url("async.pt"));
  {
    torch::NoGradGuard guard;
    for (auto& p : model->parameters()) p.fill_(7);  // training goes on at once
  }
  auto second = async.save(model, url("async-2.pt"));  // waits for the first: one in flight
  EXPECT_GT(first.get().size, 0u);
  second.get();
  auto restored = make_model(7);
  load(restored, url("async.pt"), options_);
  expect_same_parameters(expected, restored);
  load(restored, url("async-2.pt"), options_);
  expect_same_parameters(model, restored);
}

TEST(AsyncCheckpointerTest, ASaveThatCannotStartFailsItsFutureAndFreesItsSlot) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "fork() of a threaded process under a sanitizer runtime can deadlock in it";
#endif
  // In a child the blocking pool has no thread yet, so a failed thread start leaves none.
  const std::string dir = ::testing::TempDir() + "async-no-thread";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(20);  // a hang ends the child with SIGALRM, which the parent reports
    internal::ThreadPool::fail_thread_starts_for_testing(1000);
    int code = 0;
    {
      AsyncCheckpointer async;
      auto future = async.save(make_model(1), "file://" + dir + "/a.pt");
      try {
        future.get();
        code = 2;  // it claimed success
      } catch (const Error& e) {
        if (e.code() != absl::StatusCode::kResourceExhausted) code = 3;
      }
      if (async.saves_in_flight() != 0) code = 4;
      // The slot is free again: a second save does not wait for ever.
      auto second = async.save(make_model(2), "file://" + dir + "/b.pt");
      if (second.wait_for(std::chrono::seconds(0)) != std::future_status::ready) code = 5;
    }  // the destructor's wait() returns
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child hung (SIGALRM) or crashed";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, CheckpointTest, ::testing::Values("gcs", "local", "s3"),
                         [](const auto& info) { return info.param; });

class CheckpointFaultTest : public CheckpointTest {};

TEST_P(CheckpointFaultTest, TransientFailuresAreRetriedAndTheCheckpointIsExact) {
  using emulator::Fault;
  emu_->inject_fault("objects.insert", Fault::status(503));
  emu_->inject_fault("objects.insert", Fault::reset());
  emu_->inject_fault("objects.insert", Fault::break_after(3));
  emu_->inject_fault("objects.compose", Fault::status(500));
  emu_->inject_fault("objects.media", Fault::break_after(1000));
  emu_->inject_fault("objects.media", Fault::status(503));
  auto model = make_model(8);
  save(model, url("flaky.pt"), options_);
  auto restored = make_model(9);
  load(restored, url("flaky.pt"), options_);
  expect_same_parameters(model, restored);
  EXPECT_EQ(emu_->pending_faults("objects.insert") + emu_->pending_faults("objects.media"), 0u);
  EXPECT_THAT(all_names(), ::testing::ElementsAre("flaky.pt"));
}

TEST_P(CheckpointFaultTest, APermanentFailureThrowsAndLeavesNoObjectAndNoParts) {
  emu_->inject_fault("objects.insert", emulator::Fault::status(403));
  try {
    save(make_model(1), url("denied.pt"), options_);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), absl::StatusCode::kPermissionDenied) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("part "));
  }
  AsyncCheckpointer async(options_);
  emu_->inject_fault("objects.insert", emulator::Fault::status(403));
  auto future = async.save(make_model(1), url("denied-async.pt"));
  EXPECT_THROW(future.get(), Error);
  EXPECT_THAT(all_names(), ::testing::IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(Gcs, CheckpointFaultTest, ::testing::Values("gcs"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace dataflux
