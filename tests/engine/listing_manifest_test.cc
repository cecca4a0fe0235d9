// The Listing container and its manifest format: round trips, and every validation failing
// for the right reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "dataflux/crc32c.h"
#include "engine/list_filter.h"
#include "engine/lister_test_env.h"

namespace dataflux::testing {
namespace {

Listing sample(std::size_t n = 50) {
  Listing l("gs://bucket", "train/");
  for (std::size_t i = 0; i < n; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "train/%05zu\xc3\xbf.bin", i);
    l.add(buf, i * 1000, static_cast<std::int64_t>(1700000000000000 + i),
          i % 3 ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(i * 2654435761u))
                : std::nullopt);
  }
  return l;
}

std::string temp_path(const char* name) {
  return std::string(::testing::TempDir()) + name + std::to_string(::getpid());
}

TEST(ListingTest, AccessorsIterationAndFind) {
  Listing l = sample();
  ASSERT_EQ(l.size(), 50u);
  EXPECT_EQ(l.name(7), "train/00007\xc3\xbf.bin");
  EXPECT_EQ(l.object_size(7), 7000u);
  EXPECT_EQ(l.generation(7), 1700000000000007);
  EXPECT_EQ(l.crc32c(7), static_cast<std::uint32_t>(7 * 2654435761u));
  EXPECT_EQ(l.crc32c(9), std::nullopt);
  std::size_t count = 0;
  std::uint64_t total = 0;
  for (const auto& e : l) {
    EXPECT_EQ(e.name, l.name(count));
    total += e.size;
    ++count;
  }
  EXPECT_EQ(count, 50u);
  EXPECT_EQ(total, l.total_bytes());
  EXPECT_EQ(l.end() - l.begin(), 50);
  EXPECT_EQ(l.find("train/00031\xc3\xbf.bin"), 31u);
  EXPECT_EQ(l.find("train/00031"), std::nullopt);
  EXPECT_EQ(l.find("zzz"), std::nullopt);
  EXPECT_EQ(Listing().find("a"), std::nullopt);
  EXPECT_GT(l.memory_bytes(), 50u * 28);
}

TEST(ListingTest, AppendKeepsNamesAndMetadata) {
  Listing a = sample(10), b("gs://bucket", "train/");
  b.add("train/zz", 5, 6, 7u);
  a.append(b);
  ASSERT_EQ(a.size(), 11u);
  EXPECT_EQ(a.name(10), "train/zz");
  EXPECT_EQ(a.name(9), "train/00009\xc3\xbf.bin");
  EXPECT_EQ(a.crc32c(10), 7u);
}

TEST(ListingManifestTest, RoundTripsThroughBytesFilesAndObjects) {
  for (std::size_t n : {0, 1, 8, 9, 1000}) {
    Listing l = sample(n);
    auto back = Listing::parse(l.serialize());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(rows(*back), rows(l));
    EXPECT_EQ(back->source(), "gs://bucket");
    EXPECT_EQ(back->prefix(), "train/");
  }
  Listing l = sample();
  const std::string path = temp_path("manifest");
  ASSERT_TRUE(l.save(path).ok());
  ManifestExpectation expect;
  expect.source = "gs://bucket";
  expect.prefix = "train/";
  auto loaded = Listing::load(path, expect);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(rows(*loaded), rows(l));
  std::remove(path.c_str());
}

TEST(ListingManifestTest, ValidationNamesWhatIsWrong) {
  const std::string good = sample().serialize();
  auto message = [](const absl::StatusOr<Listing>& r) { return std::string(r.status().message()); };

  auto flipped = good;
  flipped[good.size() / 2] ^= 0x10;
  auto r = Listing::parse(flipped);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(message(r), ::testing::HasSubstr("checksum"));

  r = Listing::parse(good.substr(0, good.size() - 9));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);

  r = Listing::parse("not a manifest at all");
  EXPECT_THAT(message(r), ::testing::HasSubstr("magic"));
  EXPECT_FALSE(Listing::parse("").ok());

  ManifestExpectation other_source;
  other_source.source = "s3://bucket";
  r = Listing::parse(good, other_source);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(message(r), ::testing::HasSubstr("s3://bucket"));
  ManifestExpectation other_prefix;
  other_prefix.prefix = "val/";
  r = Listing::parse(good, other_prefix);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(message(r), ::testing::HasSubstr("val/"));

  // Unsorted names (a valid checksum over a bad body) are caught.
  Listing unsorted("gs://bucket", "");
  unsorted.add("b", 1, 1, std::nullopt);
  unsorted.add("a", 1, 1, std::nullopt);
  r = Listing::parse(unsorted.serialize());
  EXPECT_THAT(message(r), ::testing::HasSubstr("sorted"));

  auto missing = Listing::load(temp_path("no-such-manifest"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

// A header that claims far more objects than the bytes hold fails cleanly (no huge
// allocation), even with a recomputed checksum.
TEST(ListingManifestTest, LyingCountIsRejected) {
  std::string bytes = sample(4).serialize();
  bytes.resize(bytes.size() - 4);
  // count sits after magic(8) version(4) flags(4) source(4+11) prefix(4+6).
  const std::size_t count_at = 8 + 4 + 4 + 4 + 11 + 4 + 6;
  for (int i = 0; i < 8; ++i) bytes[count_at + i] = static_cast<char>(0x7f);
  const std::uint32_t crc = dataflux::crc32c(bytes);
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  auto r = Listing::parse(bytes);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("count"));
}

class ListingObjectTest : public GcsEmulatorTest {};

TEST_F(ListingObjectTest, SavesToAndLoadsFromAnObject) {
  for (int i = 0; i < 300; ++i) seed_object("img/" + std::to_string(i), std::string(i % 9, 'q'));
  auto listing = list_objects_fast(*store_, bucket_, "img/");
  ASSERT_TRUE(listing.ok()) << listing.status();
  ASSERT_EQ(listing->size(), 300u);
  ASSERT_TRUE(listing->save(*store_, bucket_, "manifests/img.manifest").ok());
  ManifestExpectation expect;
  expect.source = "gs://" + bucket_;
  expect.prefix = "img/";
  auto loaded = Listing::load(*store_, bucket_, "manifests/img.manifest", expect);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(rows(*loaded), rows(*listing));
  // A damaged object is refused with its name in the message.
  std::string bytes = stored("manifests/img.manifest");
  bytes[40] ^= 1;
  seed_object("manifests/bad.manifest", bytes);
  auto bad = Listing::load(*store_, bucket_, "manifests/bad.manifest");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("bad.manifest"));
}

TEST(GlobTest, SegmentsAndDoubleStar) {
  using internal::glob_match;
  EXPECT_TRUE(glob_match("*.jpg", "a.jpg"));
  EXPECT_FALSE(glob_match("*.jpg", "x/a.jpg"));
  EXPECT_TRUE(glob_match("**/*.jpg", "a.jpg"));
  EXPECT_TRUE(glob_match("**/*.jpg", "x/y/a.jpg"));
  EXPECT_FALSE(glob_match("**/*.jpg", "x/y/a.png"));
  EXPECT_TRUE(glob_match("x/**", "x/y/z"));
  EXPECT_TRUE(glob_match("x/**/z", "x/z"));
  EXPECT_TRUE(glob_match("shard-[0-4]?.tar", "shard-17.tar"));
  EXPECT_FALSE(glob_match("shard-[0-4]?.tar", "shard-57.tar"));
  EXPECT_TRUE(glob_match("**", ""));
  EXPECT_FALSE(glob_match("a", "a/b"));
}

}  // namespace
}  // namespace dataflux::testing
