#include "dataflux/tensor_io.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "dataflux/gcs.h"
#include "dataflux/local.h"
#include "emulator/emulator.h"

namespace dataflux {
namespace {

// Every torch-layer behaviour runs on both the embedded default and GCS (the emulator).
class TensorIoTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "local") {
      char tmpl[] = "/tmp/dataflux_tensor_XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      dir_ = tmpl;
      bucket_ = dir_;
      store_ = make_local_store(dir_, LocalOptions{false}).value();
    } else {
      emulator_ = emulator::Emulator::start({}).value();
      bucket_ = "tensor-bucket";
      ASSERT_TRUE(emulator_->create_bucket(bucket_).ok());
      GcsOptions options;
      options.endpoint = emulator_->endpoint();
      options.anonymous = true;
      store_ = make_gcs_store(options).value();
    }
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  std::string bucket_;
  std::unique_ptr<emulator::Emulator> emulator_;
  std::shared_ptr<ObjectStore> store_;
};

TEST_P(TensorIoTest, TensorRoundTripIsBitExact) {
  at::Tensor values = at::arange(0, 100000, at::kFloat).mul_(0.5);
  ObjectMetadata meta = write_object_tensor(*store_, bucket_, "tensors/a.bin", values);
  EXPECT_EQ(meta.size, values.nbytes());
  at::Tensor bytes = read_object_tensor(*store_, bucket_, "tensors/a.bin");
  EXPECT_EQ(bytes.scalar_type(), at::kByte);
  EXPECT_EQ(bytes.numel(), static_cast<int64_t>(values.nbytes()));
  EXPECT_TRUE(at::equal(bytes.view(at::kFloat), values));
}

// Past 8 MiB the bytes land in a huge-page mapping that the tensor's storage owns and frees.
TEST_P(TensorIoTest, LargeTensorRoundTripIsBitExactAndOwnsItsMemory) {
  at::Tensor values = at::arange(0, 3 << 20, at::kInt).mul_(7);  // 12 MiB
  write_object_tensor(*store_, bucket_, "tensors/large.bin", values);
  at::Tensor copy;
  {
    at::Tensor bytes = read_object_tensor(*store_, bucket_, "tensors/large.bin");
    ASSERT_EQ(bytes.numel(), static_cast<int64_t>(values.nbytes()));
    EXPECT_TRUE(bytes.is_contiguous());
    copy = bytes.view(at::kInt);  // shares the storage beyond `bytes`
  }
  EXPECT_TRUE(at::equal(copy, values));
}

TEST_P(TensorIoTest, MissingObjectThrowsErrorWithStatus) {
  try {
    read_object_tensor(*store_, bucket_, "no/such/object");
    FAIL() << "expected dataflux::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), absl::StatusCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("no/such/object"), std::string::npos) << e.what();
  }
}

TEST_P(TensorIoTest, NonContiguousTensorIsRejectedClearly) {
  at::Tensor t = at::arange(0, 16, at::kFloat).view({4, 4}).t();
  EXPECT_THROW(write_object_tensor(*store_, bucket_, "x", t), Error);
}

INSTANTIATE_TEST_SUITE_P(Backends, TensorIoTest, ::testing::Values("local", "gcs"));

}  // namespace
}  // namespace dataflux
