// Parallel ranged reads on gs:// and file://: exact bytes at every size, CRC32C verified,
// interrupted ranges resumed, corrupted stored bytes reported as DataLoss.
#include "engine/ranged_read.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <gmock/gmock.h>

#include "engine/upload_test_env.h"

namespace dataflux::testing {
namespace {

using internal::RangedReadOptions;

class RangedReadTest : public BackendTest {
 protected:
  void put(const std::string& name, const std::string& data) {
    auto m = store_->write_object(write_request(bucket_, name), data);
    ASSERT_TRUE(m.ok()) << m.status();
  }
  absl::StatusOr<internal::RangedReadResult> read(const std::string& name, std::string& out) {
    RangedReadOptions o;
    o.range_size = 64 << 10;
    o.max_requests_in_flight = 4;
    return internal::read_object_ranged(*store_, bucket_, name, o, [&](std::uint64_t size) {
      out.assign(size, '\0');
      return out.data();
    });
  }
  // Flips one stored byte behind the store's back, keeping size and mtime (bit rot).
  void corrupt(const std::string& name, const std::string& data, std::size_t at) {
    std::string path;
    if (gcs()) {
      for (const auto& e : std::filesystem::directory_iterator(emu_dir_)) {
        if (std::filesystem::file_size(e.path()) != data.size()) continue;
        std::ifstream in(e.path(), std::ios::binary);
        std::string content((std::istreambuf_iterator<char>(in)), {});
        if (content == data) path = e.path();
      }
    } else {
      path = dir_ + "/" + name;
    }
    ASSERT_FALSE(path.empty());
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    int fd = open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const char flipped = static_cast<char>(data[at] ^ 0x20);
    ASSERT_EQ(pwrite(fd, &flipped, 1, static_cast<off_t>(at)), 1);
    const timespec times[2] = {st.st_atim, st.st_mtim};
    ASSERT_EQ(futimens(fd, times), 0);
    close(fd);
  }
};

TEST_P(RangedReadTest, ReadsExactlyAtEverySize) {
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{(64 << 10) - 1},
                           std::size_t{64 << 10}, std::size_t{(64 << 10) * 9 + 7}}) {
    SCOPED_TRACE(size);
    const std::string data = random_bytes(size, size);
    const std::string name = "obj-" + std::to_string(size);
    put(name, data);
    std::string out;
    auto r = read(name, out);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(out, data);
    EXPECT_EQ(r->bytes, size);
    EXPECT_EQ(r->crc32c_verified, r->metadata.crc32c.has_value());
  }
}

TEST_P(RangedReadTest, CorruptedStoredBytesAreDataLoss) {
  const std::string data = random_bytes((64 << 10) * 5 + 3, 77);
  put("corrupt.pt", data);
  auto meta = store_->get_object_metadata(bucket_, "corrupt.pt");
  ASSERT_TRUE(meta.ok());
  if (!meta->crc32c) GTEST_SKIP() << "this filesystem keeps no checksum (no user xattrs)";
  corrupt("corrupt.pt", data, 200000);
  std::string out;
  auto r = read("corrupt.pt", out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("corrupt.pt"));
}

TEST_P(RangedReadTest, MissingObjectIsNotFound) {
  std::string out;
  EXPECT_EQ(read("absent.pt", out).status().code(), absl::StatusCode::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Backends, RangedReadTest, ::testing::Values("gcs", "local"),
                         [](const auto& info) { return info.param; });

class RangedReadFaultTest : public RangedReadTest {};

TEST_P(RangedReadFaultTest, BrokenAndFailedRangesAreRetried) {
  const std::string data = random_bytes((64 << 10) * 6, 5);
  put("faulty.pt", data);
  emu_->inject_fault("objects.media", emulator::Fault::break_after(1000));
  emu_->inject_fault("objects.media", emulator::Fault::status(503));
  emu_->inject_fault("objects.media", emulator::Fault::reset());
  std::string out;
  auto r = read("faulty.pt", out);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(out, data);
  EXPECT_TRUE(r->crc32c_verified);
  EXPECT_EQ(emu_->request_count("objects.media"), 9u);  // 6 ranges + 3 retries
}

TEST_P(RangedReadFaultTest, APermanentRangeFailureNamesTheRange) {
  put("denied.pt", random_bytes((64 << 10) * 3, 5));
  emu_->inject_fault("objects.media", emulator::Fault::status(403));
  std::string out;
  auto r = read("denied.pt", out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("range "));
}

INSTANTIATE_TEST_SUITE_P(Gcs, RangedReadFaultTest, ::testing::Values("gcs"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace dataflux::testing
