// ShardWriter and TarSampleReader on every backend, against GNU tar and Python's tarfile as
// independent peers, and the shard index.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "dataflux/crc32c.h"
#include "dataflux/shards.h"
#include "shards/shards_test_env.h"
#include "shards/tar_io.h"

namespace dataflux::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Fields = std::map<std::string, std::string>;
struct Read {
  std::string key;
  Fields fields;
  bool operator==(const Read& o) const { return key == o.key && fields == o.fields; }
};

FetchBuffer heap(std::uint64_t size) {
  auto bytes = std::shared_ptr<char[]>(new char[size + 1]);
  return FetchBuffer{bytes.get(), bytes};
}

absl::StatusOr<std::vector<Read>> read_samples(const std::string& shard,
                                               const std::string& what = "shard") {
  internal::TarSampleReader reader(shard.data(), shard.size(), what, heap);
  std::vector<Read> out;
  while (true) {
    auto next = reader.next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) return out;
    Read r{(*next)->key, {}};
    for (const auto& f : (*next)->fields) r.fields[f.name] = std::string(f.buffer.data, f.size);
    out.push_back(std::move(r));
  }
}

std::string bytes_of(std::uint64_t seed, std::size_t size) {
  std::mt19937_64 rng(seed);
  std::string s(size, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::vector<Read> make_samples(int n, std::size_t size = 3000) {
  std::vector<Read> samples;
  for (int i = 0; i < n; ++i) {
    char key[32];
    std::snprintf(key, sizeof(key), "class%d/%04d", i % 3, i);
    samples.push_back({key, {{"jpg", bytes_of(i, size + i)}, {"cls", std::to_string(i % 3)}}});
  }
  return samples;
}

absl::Status write_all(ShardWriter& w, const std::vector<Read>& samples) {
  for (const auto& s : samples) {
    std::vector<ShardField> fields;
    for (const auto& [name, bytes] : s.fields) fields.push_back({name, bytes});
    if (absl::Status st = w.write(s.key, fields); !st.ok()) return st;
  }
  return absl::OkStatus();
}

std::string write_file(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int sh(const std::string& command) { return std::system(command.c_str()); }

// ---- names ----------------------------------------------------------------------------------

TEST(MemberNames, SplitAtTheFirstDotOfTheFileNameAsWebDatasetDoes) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(internal::split_member_name("train/cat/001.jpg"), P("train/cat/001", "jpg"));
  EXPECT_EQ(internal::split_member_name("a.b/c.seg.PNG"), P("a.b/c", "seg.png"));
  EXPECT_EQ(internal::split_member_name("noext"), std::nullopt);
  EXPECT_EQ(internal::split_member_name("dir/.hidden"), std::nullopt);
  EXPECT_EQ(internal::split_member_name("trailing."), std::nullopt);
}

TEST(ShardCompression, FromTheName) {
  using internal::ShardCompression;
  EXPECT_EQ(internal::shard_compression_from_name("a-000000.tar"), ShardCompression::kNone);
  EXPECT_EQ(internal::shard_compression_from_name("a.tgz"), ShardCompression::kGzip);
  EXPECT_EQ(internal::shard_compression_from_name("a.tar.gz"), ShardCompression::kGzip);
  EXPECT_EQ(internal::shard_compression_from_name("a.tar.zst"), ShardCompression::kZstd);
  EXPECT_EQ(internal::shard_compression_from_name("a.tar.index.json"), std::nullopt);
  EXPECT_EQ(internal::shard_compression_from_name("a.zip"), std::nullopt);
}

// ---- the writer on every backend -------------------------------------------------------------

class ShardWriterTest : public ShardBackendTest {
 protected:
  ShardWriterOptions options(std::uint64_t max_count = 100'000,
                             std::uint64_t max_size = 100'000'000) const {
    ShardWriterOptions o;
    o.store = store();
    o.max_count = max_count;
    o.max_size = max_size;
    o.upload.part_size = 5 << 20;
    return o;
  }
};

TEST_P(ShardWriterTest, RoundTripsAndRollsOverAtMaxCount) {
  const auto samples = make_samples(25);
  auto w = ShardWriter::create(root_ + "out/train", options(10));
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE(write_all(**w, samples).ok());
  auto shards = (*w)->close();
  ASSERT_TRUE(shards.ok()) << shards.status();
  ASSERT_EQ(shards->size(), 3u);
  EXPECT_EQ((*shards)[0].url, root_ + "out/train-000000.tar");
  EXPECT_EQ((*shards)[2].url, root_ + "out/train-000002.tar");
  EXPECT_EQ((*shards)[2].index_url, root_ + "out/train-000002.tar.index.json");
  std::vector<Read> back;
  for (const auto& info : *shards) {
    const std::string bytes = read(info.url);
    EXPECT_EQ(bytes.size(), info.size);
    EXPECT_EQ(crc32c(bytes), info.crc32c.value());
    auto got = read_samples(bytes, info.url);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->size(), info.samples);
    back.insert(back.end(), got->begin(), got->end());
  }
  EXPECT_EQ(back, samples);
}

TEST_P(ShardWriterTest, RollsOverBeforeMaxSizeAndGivesALargeSampleAShardOfItsOwn) {
  auto w = ShardWriter::create(root_ + "big/s", options(1000, 22000));
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<Read> samples = make_samples(6, 5000);  // 6,656 tar bytes each: 3 fit in 22,000
  samples.insert(samples.begin() + 3, Read{"huge/0", {{"bin", bytes_of(9, 50000)}}});
  ASSERT_TRUE(write_all(**w, samples).ok());
  auto shards = (*w)->close();
  ASSERT_TRUE(shards.ok()) << shards.status();
  std::vector<std::uint64_t> counts;
  for (const auto& info : *shards) {
    counts.push_back(info.samples);
    if (info.samples > 1) {
      EXPECT_LE(info.size, 22000u) << info.url;
    }
  }
  EXPECT_THAT(counts, ElementsAre(3, 1, 3));
}

TEST_P(ShardWriterTest, TheIndexLocatesEverySampleAndItsFields) {
  const auto samples = make_samples(7);
  auto w = ShardWriter::create(root_ + "idx/s", options());
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE(write_all(**w, samples).ok());
  auto shards = (*w)->close();
  ASSERT_TRUE(shards.ok()) << shards.status();
  ASSERT_EQ(shards->size(), 1u);
  const std::string bytes = read((*shards)[0].url);
  auto index = shard_index_from_json(read((*shards)[0].index_url), (*shards)[0].index_url);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->shard, StorageUrl::parse((*shards)[0].url).value().object);
  EXPECT_EQ(index->size, bytes.size());
  EXPECT_EQ(index->crc32c, crc32c(bytes));
  ASSERT_EQ(index->samples.size(), samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& e = index->samples[i];
    EXPECT_EQ(e.key, samples[i].key);
    EXPECT_EQ(e.crc32c, crc32c(std::string_view(bytes).substr(e.offset, e.size)));
    // The sample's range alone is a tar fragment a reader parses into the same sample.
    auto alone = read_samples(bytes.substr(e.offset, e.size));
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_THAT(*alone, ElementsAre(samples[i]));
    for (const auto& f : e.fields) {
      EXPECT_EQ(bytes.substr(f.offset, f.size), samples[i].fields.at(f.name)) << f.name;
    }
  }
}

TEST_P(ShardWriterTest, CompressedShardsRoundTripWithoutAnIndex) {
  for (const std::string compression : {"gz", "zst"}) {
    auto o = options();
    o.compression = compression;
    auto w = ShardWriter::create(root_ + compression + "/s", o);
    ASSERT_TRUE(w.ok()) << w.status();
    const auto samples = make_samples(9);
    ASSERT_TRUE(write_all(**w, samples).ok());
    auto shards = (*w)->close();
    ASSERT_TRUE(shards.ok()) << shards.status();
    ASSERT_EQ(shards->size(), 1u);
    EXPECT_THAT((*shards)[0].url,
                ::testing::EndsWith(compression == "gz" ? ".tar.gz" : ".tar.zst"));
    EXPECT_EQ((*shards)[0].index_url, "");
    const std::string bytes = read((*shards)[0].url);
    EXPECT_LT(bytes.size(), 9u * 3000u + 10000u);
    auto got = read_samples(bytes);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, samples);
  }
}

TEST_P(ShardWriterTest, AWriterDroppedWithoutCloseLeavesNoShard) {
  {
    auto w = ShardWriter::create(root_ + "dropped/s", options());
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE(write_all(**w, make_samples(3)).ok());
  }
  auto listed = list_shards({root_ + "dropped/"}, store());
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kNotFound) << listed.status();
}

TEST_P(ShardWriterTest, ListsShardsAcrossPrefixesSortedWithoutIndexesOrDuplicates) {
  for (const std::string p : {"a/x", "b/y"}) {
    auto w = ShardWriter::create(root_ + "many/" + p, options(2));
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE(write_all(**w, make_samples(3)).ok());
    ASSERT_TRUE((*w)->close().ok());
  }
  auto listed = list_shards({root_ + "many/b/", root_ + "many/a/", root_ + "many/a/x"}, store());
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::vector<std::string> names;
  for (const auto& s : listed->shards) names.push_back(s.name);
  const std::string base = StorageUrl::parse(root_ + "many/").value().object;
  EXPECT_THAT(names, ElementsAre(base + "a/x-000000.tar", base + "a/x-000001.tar",
                                 base + "b/y-000000.tar", base + "b/y-000001.tar"));
  auto none = list_shards({root_ + "nothing/"}, store());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr(root_ + "nothing/"));
}

INSTANTIATE_TEST_SUITE_P(Backends, ShardWriterTest, ::testing::Values("local", "gcs", "s3"),
                         [](const auto& info) { return info.param; });

// ---- what the writer refuses -----------------------------------------------------------------

TEST(ShardWriterValidation, RefusesWhatAReaderWouldReadBackDifferently) {
  char tmpl[] = "/tmp/dataflux-shardval-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto w = ShardWriter::create(dir + "/s");
  ASSERT_TRUE(w.ok()) << w.status();
  auto refuse = [&](const std::string& key, std::vector<ShardField> fields, const char* why) {
    absl::Status s = (*w)->write(key, fields);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << key;
    EXPECT_THAT(std::string(s.message()), HasSubstr(why)) << s;
  };
  refuse("", {{"jpg", "x"}}, "empty");
  refuse("cat/a.b", {{"jpg", "x"}}, "'.'");
  refuse("cat/a", {{"JPG", "x"}}, "lower case");
  refuse("cat/a", {{"jpg", "x"}, {"jpg", "y"}}, "twice");
  refuse("cat/a", {{"a/b", "x"}}, "'/'");
  refuse("cat/a", {}, "needs a field");
  ASSERT_TRUE((*w)->write("cat/a", {{"jpg", "x"}}).ok());
  refuse("cat/a", {{"png", "x"}}, "merge");
  EXPECT_TRUE((*w)->close().ok());
  EXPECT_EQ(ShardWriter::create(dir + "/s",
                                [] {
                                  ShardWriterOptions o;
                                  o.compression = "lz4";
                                  return o;
                                }())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

// ---- reading what others wrote, and others reading ours ---------------------------------------

class TarPeers : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dataflux-tarpeer-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(TarPeers, ReadsShardsGnuTarWrote) {
  if (sh("tar --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "GNU tar is not installed";
  std::filesystem::create_directories(dir_ + "/in/cat");
  write_file(dir_ + "/in/cat/001.jpg", "JPEG1");
  write_file(dir_ + "/in/cat/001.cls", "0");
  write_file(dir_ + "/in/cat/002.jpg", "JPEG2");
  write_file(dir_ + "/in/cat/002.cls", "0");
  // GNU tar compresses with the gzip and zstd programs (tools/deps.sh installs both).
  for (const std::string flag : {"", "z", "--zstd "}) {
    if (flag == "--zstd " && sh("zstd --version >/dev/null 2>&1") != 0) {
      ADD_FAILURE() << "the zstd program is missing (Debian package zstd; tools/deps.sh)";
      continue;
    }
    const std::string out = dir_ + "/gnu.tar" + (flag == "z" ? ".gz" : flag.empty() ? "" : ".zst");
    const std::string create =
        flag == "--zstd "
            ? "cd " + dir_ + "/in && tar --zstd --sort=name -cf " + out + " cat 2>/dev/null"
            : "cd " + dir_ + "/in && tar --sort=name -c" + flag + "f " + out + " cat";
    if (sh(create) != 0) {
      ADD_FAILURE() << create;
      continue;
    }
    auto got = read_samples(slurp(out), out);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_THAT(*got, ElementsAre(Read{"cat/001", {{"cls", "0"}, {"jpg", "JPEG1"}}},
                                  Read{"cat/002", {{"cls", "0"}, {"jpg", "JPEG2"}}}))
        << out;
  }
}

TEST_F(TarPeers, ReadsShardsPythonTarfileWrote) {
  if (sh("python3 -c 'import tarfile' 2>/dev/null") != 0) GTEST_SKIP() << "no python3";
  const std::string out = dir_ + "/py.tar";
  const std::string script =
      "import io, tarfile\n"
      "with tarfile.open('" +
      out +
      "', 'w', format=tarfile.GNU_FORMAT) as t:\n"
      "    for key, ext, data in [('k/" +
      std::string(120, 'l') +
      "', 'txt', b'long'),\n"
      "                           ('k/b', 'txt', b'x' * 10000), ('k/b', 'json', b'{}')]:\n"
      "        info = tarfile.TarInfo(key + '.' + ext)\n"
      "        info.size = len(data)\n"
      "        t.addfile(info, io.BytesIO(data))\n";
  write_file(dir_ + "/w.py", script);
  ASSERT_EQ(sh("python3 " + dir_ + "/w.py"), 0);
  auto got = read_samples(slurp(out), out);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre(Read{"k/" + std::string(120, 'l'), {{"txt", "long"}}},
                                Read{"k/b", {{"txt", std::string(10000, 'x')}, {"json", "{}"}}}));
}

TEST_F(TarPeers, GnuTarAndTarfileReadOurShards) {
  auto w = ShardWriter::create(dir_ + "/ours");
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<Read> samples = make_samples(4);
  samples.push_back({"deep/" + std::string(150, 'n') + "/x", {{"seg.png", "P"}}});  // pax
  ASSERT_TRUE(write_all(**w, samples).ok());
  ASSERT_TRUE((*w)->close().ok());
  const std::string shard = dir_ + "/ours-000000.tar";
  if (sh("tar --version >/dev/null 2>&1") == 0) {
    std::filesystem::create_directories(dir_ + "/x");
    ASSERT_EQ(sh("tar -xf " + shard + " -C " + dir_ + "/x"), 0);
    for (const auto& s : samples) {
      for (const auto& [name, bytes] : s.fields) {
        EXPECT_EQ(slurp(dir_ + "/x/" + s.key + "." + name), bytes) << s.key;
      }
    }
  }
  if (sh("python3 -c 'import tarfile' 2>/dev/null") == 0) {
    write_file(dir_ + "/r.py",
               "import tarfile, sys\n"
               "with tarfile.open(sys.argv[1]) as t:\n"
               "    for m in t:\n"
               "        print(m.name, t.extractfile(m).read().hex())\n");
    ASSERT_EQ(sh("python3 " + dir_ + "/r.py " + shard + " > " + dir_ + "/listing"), 0);
    std::string want;
    static const char* kHex = "0123456789abcdef";
    for (const auto& s : samples) {
      for (const auto& [name, bytes] : s.fields) {
        want += s.key + "." + name + " ";
        for (unsigned char c : bytes) want += {kHex[c >> 4], kHex[c & 15]};
        want += "\n";
      }
    }
    EXPECT_EQ(slurp(dir_ + "/listing"), want);
  }
}

TEST(TarSampleReader, MembersOfAPlainTarAreViewsOfTheShardWhenItHasAnOwner) {
  char tmpl[] = "/tmp/dataflux-views-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const auto samples = make_samples(5);
  for (const std::string compression : {"", "gz"}) {
    ShardWriterOptions o;
    o.compression = compression;
    auto w = ShardWriter::create(dir + "/v" + compression, o);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE(write_all(**w, samples).ok());
    auto shards = (*w)->close();
    ASSERT_TRUE(shards.ok()) << shards.status();
    auto bytes = std::make_shared<std::string>(
        slurp(StorageUrl::parse(shards->at(0).url)->object.insert(0, "/")));
    internal::TarSampleReader reader(bytes->data(), bytes->size(), "v", heap, bytes);
    std::size_t i = 0;
    while (true) {
      auto next = reader.next();
      ASSERT_TRUE(next.ok()) << next.status();
      if (!next->has_value()) break;
      ASSERT_LT(i, samples.size());
      for (const auto& f : (*next)->fields) {
        EXPECT_EQ(std::string(f.buffer.data, f.size), samples[i].fields.at(f.name));
        // Plain: a view at the member's offset; compressed: bytes of their own.
        EXPECT_EQ(f.view_offset.has_value(), compression.empty()) << f.name;
        if (f.view_offset) {
          EXPECT_EQ(f.buffer.data, bytes->data() + *f.view_offset);
        }
      }
      ++i;
    }
    EXPECT_EQ(i, samples.size());
  }
  std::filesystem::remove_all(dir);
}

// ---- damaged shards --------------------------------------------------------------------------

TEST(DamagedShards, TruncatedAndCorruptShardsAreDataLossNamingShardAndMember) {
  char tmpl[] = "/tmp/dataflux-damaged-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto w = ShardWriter::create(dir + "/d");
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE(write_all(**w, make_samples(3)).ok());
  ASSERT_TRUE((*w)->close().ok());
  const std::string shard = slurp(dir + "/d-000000.tar");
  // Cut in the middle of the second sample's image (its header starts at 4608).
  auto cut = read_samples(shard.substr(0, 6000), "gs://b/d-000000.tar");
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kDataLoss) << cut.status();
  EXPECT_THAT(std::string(cut.status().message()), HasSubstr("gs://b/d-000000.tar"));
  EXPECT_THAT(std::string(cut.status().message()), HasSubstr("class1/0001"));
  // A damaged header: the second sample's, its checksum field.
  std::string bad = shard;
  bad[4608 + 150] ^= 0x05;
  auto corrupt = read_samples(bad, "gs://b/d-000000.tar");
  EXPECT_EQ(corrupt.status().code(), absl::StatusCode::kDataLoss) << corrupt.status();
  // Not a tar at all.
  auto junk = read_samples(std::string(3000, 'j'), "gs://b/junk.tar");
  EXPECT_EQ(junk.status().code(), absl::StatusCode::kDataLoss) << junk.status();
  EXPECT_THAT(std::string(junk.status().message()), HasSubstr("gs://b/junk.tar"));
  std::filesystem::remove_all(dir);
}

TEST(DamagedShards, EmptyShardsHoldNoSamples) {
  auto empty = read_samples("");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->empty());
  auto only_trailer = read_samples(std::string(1024, '\0'));
  ASSERT_TRUE(only_trailer.ok()) << only_trailer.status();
  EXPECT_TRUE(only_trailer->empty());
}

TEST(DamagedShards, ARepeatedFieldInOneSampleIsAnError) {
  if (sh("python3 -c 'import tarfile' 2>/dev/null") != 0) GTEST_SKIP() << "no python3";
  char tmpl[] = "/tmp/dataflux-dup-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  write_file(dir + "/w.py",
             "import io, tarfile, sys\n"
             "with tarfile.open(sys.argv[1], 'w') as t:\n"
             "    for n in ['a/1.jpg', 'a/1.JPG']:\n"
             "        i = tarfile.TarInfo(n); i.size = 1; t.addfile(i, io.BytesIO(b'x'))\n");
  ASSERT_EQ(sh("python3 " + dir + "/w.py " + dir + "/dup.tar"), 0);
  auto got = read_samples(slurp(dir + "/dup.tar"), "dup.tar");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("\"jpg\" twice"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dataflux::testing
