// The `dataflux` commands on each backend (gs:// and s3:// on the emulator, file:// on a
// temporary directory): cp -r up and down with spaces and non-ASCII names, ls -l/--json, du,
// stat, cat ranges, -n, mv, rm -r; pack into shards; copies between clouds; one object failing
// among many; progress on a terminal, none in a pipe.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli/common.h"
#include "cli/progress.h"
#include "dataflux/crc32c.h"
#include "emulator/emulator.h"
#include "shards/tar_io.h"
#include "tools/cli_run.h"

namespace dataflux::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

namespace fs = std::filesystem;

constexpr char kBucket[] = "cli-bucket";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rng());
  return out;
}

// Relative path → bytes of every regular file under `root`.
std::map<std::string, std::string> tree_of(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) {
      out[fs::relative(entry.path(), root).string()] = read_file(entry.path());
    }
  }
  return out;
}

// The samples of shards: key -> field -> bytes.
using Samples = std::map<std::string, std::map<std::string, std::string>>;

FetchBuffer heap(std::uint64_t size) {
  auto bytes = std::shared_ptr<char[]>(new char[size + 1]);
  return FetchBuffer{bytes.get(), bytes};
}

// Adds the samples of one shard (any compression) to *samples; returns their keys in order.
std::vector<std::string> read_shard(const std::string& shard, const std::string& what,
                                    Samples* samples) {
  std::vector<std::string> keys;
  internal::TarSampleReader reader(shard.data(), shard.size(), what, heap);
  for (;;) {
    auto next = reader.next();
    if (!next.ok()) {
      ADD_FAILURE() << next.status();
      return keys;
    }
    if (!next->has_value()) return keys;
    const internal::TarSample& sample = **next;
    keys.push_back(sample.key);
    auto& fields = (*samples)[sample.key];
    EXPECT_TRUE(fields.empty()) << what << ": sample " << sample.key << " is there twice";
    for (const auto& f : sample.fields) fields[f.name] = std::string(f.buffer.data, f.size);
  }
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/dataflux-cli-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// An emulator serving gs:// and s3:// (the same objects) with the test's S3 key, and the
// environment that points the program at it (HOME: no profile of this machine's applies).
std::unique_ptr<emulator::Emulator> start_emulator() {
  emulator::EmulatorOptions options;
  options.s3.access_keys = {{"AKIDCLITEST", "cli-test-secret"}};
  auto emu = emulator::Emulator::start(options);
  EXPECT_TRUE(emu.ok()) << emu.status();
  return emu.ok() ? *std::move(emu) : nullptr;
}

std::string environment_for(const emulator::Emulator& emu, const std::string& home) {
  return "HOME=" + home + " STORAGE_EMULATOR_HOST=" + emu.endpoint() +
         " AWS_ENDPOINT_URL=" + emu.endpoint() +
         " AWS_ACCESS_KEY_ID=AKIDCLITEST AWS_SECRET_ACCESS_KEY=cli-test-secret"
         " AWS_REGION=us-east-1";
}

// One emulator serves gs:// and s3:// (the same objects); file:// lives in a temporary
// directory.
class CliBackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    emu_ = start_emulator();
    ASSERT_NE(emu_, nullptr);
    ASSERT_TRUE(emu_->create_bucket(kBucket).ok());
    env_ = environment_for(*emu_, home_.path());
    if (GetParam() == "file") {
      base_ = "file://" + store_dir_.path();
    } else {
      base_ = GetParam() + "://" + kBucket;
    }
  }

  // A URL in the backend under test.
  std::string url(const std::string& name) const { return base_ + "/" + name; }
  // Single quotes for the shell.
  static std::string q(const std::string& text) { return "'" + text + "'"; }

  // A small tree: nested directories, a space, non-ASCII names, an empty file, and one file
  // large enough for ranged reads and parallel parts (20 MiB > the 16 MiB range and part size).
  void make_tree(const fs::path& root) {
    write_file(root / "a.txt", "alpha");
    write_file(root / "sub" / "b.txt", "bravo bravo");
    write_file(root / "sub" / "deeper" / "empty", "");
    write_file(root / "with space" / "ünïcødé.txt", "ü");
    write_file(root / "big.bin", random_bytes(20 << 20, 20261124));
  }

  // Objects straight into the backend under test, and their bytes back.
  void put(const std::string& name, const std::string& bytes) {
    if (GetParam() == "file") {
      write_file(fs::path(store_dir_.path()) / name, bytes);
    } else {
      ASSERT_TRUE(emu_->put_object(kBucket, name, bytes).ok()) << name;
    }
  }
  std::string object_data(const std::string& name) {
    if (GetParam() == "file") return read_file(fs::path(store_dir_.path()) / name);
    auto data = emu_->get_object_data(kBucket, name);
    EXPECT_TRUE(data.ok()) << name << ": " << data.status();
    return data.ok() ? *data : "";
  }
  // Every object under `prefix`, sorted (on file://, every file: temporaries too).
  std::vector<std::string> names_under(const std::string& prefix) {
    std::vector<std::string> out;
    if (GetParam() == "file") {
      const fs::path root(store_dir_.path());
      if (!fs::exists(root / prefix)) return out;
      for (const auto& entry : fs::recursive_directory_iterator(root / prefix)) {
        if (entry.is_regular_file()) out.push_back(fs::relative(entry.path(), root).string());
      }
      std::sort(out.begin(), out.end());
      return out;
    }
    for (const auto& o : emu_->list_objects(kBucket)) {
      if (o.name.compare(0, prefix.size(), prefix) == 0) out.push_back(o.name);
    }
    return out;
  }
  // Reads every shard named, in order; returns the keys of each.
  std::vector<std::vector<std::string>> read_shards(const std::vector<std::string>& names,
                                                    Samples* samples) {
    std::vector<std::vector<std::string>> keys;
    for (const auto& name : names) keys.push_back(read_shard(object_data(name), name, samples));
    return keys;
  }

  // An ImageFolder tree under data/: classes bird, cat, dog (labels 0, 1, 2 in sorted order),
  // four objects each, as .JPEG, .jpg and .png; returns the samples pack should make of it.
  Samples make_class_tree(std::size_t bytes_each) {
    struct Class {
      const char* name;
      const char* extension;
      const char* field;
    };
    const Class classes[] = {
        {"bird", "JPEG", "jpeg"}, {"cat", "jpg", "jpg"}, {"dog", "png", "png"}};
    Samples expected;
    for (int label = 0; label < 3; ++label) {
      for (int i = 0; i < 4; ++i) {
        const std::string key = std::string(classes[label].name) + "/" + std::to_string(i);
        const std::string bytes = key + random_bytes(bytes_each, 10 * label + i);
        put("data/" + key + "." + classes[label].extension, bytes);
        expected[key] = {{classes[label].field, bytes}, {"cls", std::to_string(label)}};
      }
    }
    return expected;
  }

  std::unique_ptr<emulator::Emulator> emu_;
  TempDir home_;
  TempDir work_;
  TempDir store_dir_;
  std::string env_;
  std::string base_;
};

TEST_P(CliBackendTest, CopiesATreeUpAndDownListsMeasuresAndRemovesIt) {
  const fs::path tree = fs::path(work_.path()) / "tree";
  make_tree(tree);
  const auto expected = tree_of(tree);

  CliRun r = run(env_, "cp -r " + q(tree.string()) + " " + q(url("up/")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Copied 5 objects"));

  r = run(env_, "ls -r " + q(url("up/")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, url("up/tree/a.txt") + "\n" + url("up/tree/big.bin") + "\n" +
                          url("up/tree/sub/b.txt") + "\n" + url("up/tree/sub/deeper/empty") + "\n" +
                          url("up/tree/with space/ünïcødé.txt") + "\n");

  std::uint64_t total = 0;
  for (const auto& [name, bytes] : expected) total += bytes.size();
  r = run(env_, "du -s " + q(url("up/")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(std::to_string(total)));
  r = run(env_, "du -s -h " + q(url("up/")));
  EXPECT_THAT(r.output, HasSubstr("20.0 MiB"));

  // Down again, into a directory that exists: DIR/tree/...
  const fs::path down = fs::path(work_.path()) / "down";
  fs::create_directories(down);
  r = run(env_, "cp -r " + q(url("up/tree")) + " " + q(down.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(tree_of(down / "tree"), expected);
  // Nothing but the files: no temporary left behind.
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(down)) files += entry.is_regular_file();
  EXPECT_EQ(files, expected.size());

  // Within the backend (server-side on a cloud), then rm -r.
  r = run(env_, "cp -r " + q(url("up/tree/sub")) + " " + q(url("copied/")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run(env_, "cat " + q(url("copied/sub/b.txt")));
  EXPECT_EQ(r.output, "bravo bravo");
  r = run(env_, "rm -r " + q(url("up")) + " " + q(url("copied/")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Removed 7 objects"));
  r = run(env_, "ls " + q(url("up/")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("matched no objects"));
}

TEST_P(CliBackendTest, LongAndJsonListingsStatAndCatRanges) {
  const fs::path file = fs::path(work_.path()) / "digits.txt";
  const std::string digits = "0123456789";
  write_file(file, digits);
  CliRun r = run(env_, "cp " + q(file.string()) + " " + q(url("d/digits.txt")));
  ASSERT_EQ(r.exit_code, 0) << r.output;

  r = run(env_, "ls -l " + q(url("d/")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(url("d/digits.txt")));
  EXPECT_THAT(r.output, HasSubstr("TOTAL: 1 object, 10 bytes (10 B)"));

  r = run(env_, "ls --json " + q(url("d/")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  rapidjson::Document doc;
  doc.Parse(r.output.c_str());
  ASSERT_FALSE(doc.HasParseError()) << r.output;
  EXPECT_EQ(std::string(doc["url"].GetString()), url("d/digits.txt"));
  EXPECT_EQ(doc["size"].GetUint64(), 10u);
  if (GetParam() == "gs") {  // S3 and local listings carry no CRC32C
    ASSERT_TRUE(doc.HasMember("crc32c")) << r.output;
    EXPECT_EQ(std::string(doc["crc32c"].GetString()), crc32c_to_base64(crc32c(digits)));
  }

  r = run(env_, "stat " + q(url("d/digits.txt")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Size:           10"));

  EXPECT_EQ(run(env_, "cat " + q(url("d/digits.txt"))).output, digits);
  EXPECT_EQ(run(env_, "cat -r 2-4 " + q(url("d/digits.txt"))).output, "234");
  EXPECT_EQ(run(env_, "cat -r 7- " + q(url("d/digits.txt"))).output, "789");
  EXPECT_EQ(run(env_, "cat -r -3 " + q(url("d/digits.txt"))).output, "789");
  r = run(env_, "cat -r 4-2 " + q(url("d/digits.txt")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("bad range '4-2'"));

  r = run(env_, "stat " + q(url("d/missing.txt")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("missing.txt"));
  r = run(env_, "cat " + q(url("d/missing.txt")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("missing.txt"));
}

TEST_P(CliBackendTest, NoClobberSkipsWhatExistsAndMvDeletesTheSource) {
  const fs::path one = fs::path(work_.path()) / "one.txt";
  const fs::path two = fs::path(work_.path()) / "two.txt";
  write_file(one, "first");
  write_file(two, "second");
  ASSERT_EQ(run(env_, "cp " + q(one.string()) + " " + q(url("n/x.txt"))).exit_code, 0);
  CliRun r = run(env_, "cp -n " + q(two.string()) + " " + q(url("n/x.txt")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("1 skipped"));
  EXPECT_EQ(run(env_, "cat " + q(url("n/x.txt"))).output, "first");

  // Down with -n: an existing local file is kept.
  const fs::path local = fs::path(work_.path()) / "local.txt";
  write_file(local, "mine");
  r = run(env_, "cp -n " + q(url("n/x.txt")) + " " + q(local.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_file(local), "mine");

  r = run(env_, "mv " + q(url("n/x.txt")) + " " + q(url("n/y.txt")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(run(env_, "cat " + q(url("n/y.txt"))).output, "first");
  EXPECT_EQ(run(env_, "stat " + q(url("n/x.txt"))).exit_code, 1);

  // rm of a prefix without -r is refused, naming it.
  r = run(env_, "rm " + q(url("n")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("-r"));
}

// pack: every object a sample, field = its extension, "cls" = its class folder's index; the
// shard's URL on stdout, then the summary.
TEST_P(CliBackendTest, PacksAClassFolderTreeIntoShards) {
  const Samples expected = make_class_tree(16);
  put("data/cat/.DS_Store", "not a sample");
  CliRun r = run(env_, "pack " + q(url("data")) + " " + q(url("shards/train")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, StartsWith(url("shards/train-000000.tar") + "\nPacked 12 objects ("));
  EXPECT_THAT(r.output, HasSubstr("; 1 shard, 3 classes\n"));
  EXPECT_THAT(names_under("shards/"),
              ElementsAre("shards/train-000000.tar", "shards/train-000000.tar.index.json"));
  Samples samples;
  read_shards({"shards/train-000000.tar"}, &samples);
  EXPECT_EQ(samples, expected);
}

// A new shard every --maxcount samples or before --maxsize bytes (in a human unit); gz
// compression; --no-shuffle keeps the listing's order; --no-index writes no index.
TEST_P(CliBackendTest, PackRollsOverAtMaxcountAndMaxsizeAndCompresses) {
  const Samples expected = make_class_tree(1000);
  CliRun r = run(env_, "pack --maxcount 5 --no-shuffle --no-index " + q(url("data/")) + " " +
                           q(url("count/")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, StartsWith(url("count/000000.tar") + "\n" + url("count/000001.tar") + "\n" +
                                   url("count/000002.tar") + "\nPacked 12 objects"));
  EXPECT_THAT(r.output, HasSubstr("; 3 shards, 3 classes\n"));
  const std::vector<std::string> by_count = {"count/000000.tar", "count/000001.tar",
                                             "count/000002.tar"};
  EXPECT_EQ(names_under("count/"), by_count);
  Samples samples;
  const auto keys = read_shards(by_count, &samples);
  EXPECT_EQ(samples, expected);
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_THAT(keys[0], ElementsAre("bird/0", "bird/1", "bird/2", "bird/3", "cat/0"));
  EXPECT_THAT(keys[2], ElementsAre("dog/2", "dog/3"));

  // A sample takes 2.5 KiB of tar: a few to a shard, and no shard over 6 KiB.
  r = run(env_, "pack --maxsize 6KiB " + q(url("data")) + " " + q(url("size/train")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> by_size;
  for (const auto& name : names_under("size/")) {
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tar") == 0) by_size.push_back(name);
  }
  EXPECT_GT(by_size.size(), 1u);
  for (const auto& name : by_size) EXPECT_LE(object_data(name).size(), 6144u) << name;
  samples.clear();
  read_shards(by_size, &samples);
  EXPECT_EQ(samples, expected);

  r = run(env_, "pack --compression gz --maxcount 5 " + q(url("data")) + " " + q(url("gz/train")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<std::string> gz = {"gz/train-000000.tar.gz", "gz/train-000001.tar.gz",
                                       "gz/train-000002.tar.gz"};
  EXPECT_EQ(names_under("gz/"), gz);  // no index beside a compressed shard
  EXPECT_EQ(object_data(gz[0]).substr(0, 2), "\x1f\x8b");
  samples.clear();
  read_shards(gz, &samples);
  EXPECT_EQ(samples, expected);
}

// Labels come from class folders: an object outside any is an error naming it, and nothing is
// written; --no-labels packs it, without "cls".
TEST_P(CliBackendTest, PackOfAnObjectOutsideAClassFolderFailsUnlessNoLabels) {
  put("flat/cat/1.jpg", "one");
  put("flat/stray.jpg", "stray");
  CliRun r = run(env_, "pack " + q(url("flat")) + " " + q(url("out/train")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(url("flat/stray.jpg")));
  EXPECT_THAT(r.output, HasSubstr("not in a class folder"));
  EXPECT_THAT(r.output, Not(HasSubstr("Packed")));
  EXPECT_THAT(names_under("out/"), IsEmpty());

  r = run(env_, "pack --no-labels " + q(url("flat")) + " " + q(url("out/train")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Packed 2 objects"));
  EXPECT_THAT(r.output, HasSubstr("; 1 shard, no labels\n"));
  Samples samples;
  read_shards({"out/train-000000.tar"}, &samples);
  EXPECT_EQ(samples, (Samples{{"cat/1", {{"jpg", "one"}}}, {"stray", {{"jpg", "stray"}}}}));
}

INSTANTIATE_TEST_SUITE_P(Backends, CliBackendTest, ::testing::Values("gs", "s3", "file"),
                         [](const auto& info) { return info.param; });

class CliEmulatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    emu_ = start_emulator();
    ASSERT_NE(emu_, nullptr);
    ASSERT_TRUE(emu_->create_bucket("from-bucket").ok());
    ASSERT_TRUE(emu_->create_bucket("to-bucket").ok());
    env_ = environment_for(*emu_, home_.path());
  }

  std::unique_ptr<emulator::Emulator> emu_;
  TempDir home_;
  TempDir work_;
  std::string env_;
};

// gs:// to s3:// streams through the engine (no server-side copy across clouds).
TEST_F(CliEmulatorTest, CopiesBetweenClouds) {
  const std::string big = random_bytes(3 << 20, 7);
  ASSERT_TRUE(emu_->put_object("from-bucket", "p/big.bin", big).ok());
  ASSERT_TRUE(emu_->put_object("from-bucket", "p/small.txt", "small").ok());
  CliRun r = run(env_, "cp -r gs://from-bucket/p s3://to-bucket/q/");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(emu_->get_object_data("to-bucket", "q/p/big.bin").value(), big);
  EXPECT_EQ(emu_->get_object_data("to-bucket", "q/p/small.txt").value(), "small");
  EXPECT_EQ(emu_->request_count("objects.copy"), 0u);
}

// One object failing among many: it is named, the rest are copied, the exit status is 1, and
// nothing half-written is left in the destination.
TEST_F(CliEmulatorTest, APartialFailureNamesTheObjectAndFinishesTheRest) {
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(
        emu_->put_object("from-bucket", "many/" + std::to_string(100 + i), std::to_string(i)).ok());
  }
  emu_->inject_fault("objects.media", emulator::Fault::status(403));
  const fs::path down = fs::path(work_.path()) / "down";
  CliRun r = run(env_, "cp -r gs://from-bucket/many " + down.string() + "/");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cp gs://from-bucket/many/"));
  EXPECT_THAT(r.output, HasSubstr("403"));
  EXPECT_THAT(r.output, HasSubstr("Copied 19 objects"));
  EXPECT_THAT(r.output, HasSubstr("1 failed"));
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(down)) {
    ASSERT_THAT(entry.path().filename().string(), Not(HasSubstr("dataflux-cp")));
    files += entry.is_regular_file();
  }
  EXPECT_EQ(files, 19u);
}

// An object overwritten during its copy is an error, never a file of two versions nor a
// silent copy of another version than the one listed: overwritten between the listing (a
// stat) and the copy, between the copy's own stat and its ranged reads, and during a
// cross-cloud stream. Nothing is left at the destination.
TEST_F(CliEmulatorTest, AnObjectThatChangesDuringTheCopyIsAnErrorNotASplice) {
  const std::string v1 = random_bytes(20 << 20, 1);
  const std::string v2 = random_bytes(20 << 20, 2);
  ASSERT_TRUE(emu_->put_object("from-bucket", "obj", v1).ok());
  auto overwrite = [&] { ASSERT_TRUE(emu_->put_object("from-bucket", "obj", v2).ok()); };
  const std::string down = work_.path() + "/obj";

  emu_->after_next("objects.get", overwrite);  // the CLI's stat of the source
  CliRun r = run(env_, "cp gs://from-bucket/obj " + down);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("changed during the copy"));
  EXPECT_FALSE(fs::exists(down));

  ASSERT_TRUE(emu_->put_object("from-bucket", "obj", v1).ok());
  emu_->after_next("objects.get", [] {});      // the CLI's stat
  emu_->after_next("objects.get", overwrite);  // the ranged read's own stat
  r = run(env_, "cp gs://from-bucket/obj " + down);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("changed or was deleted during the copy"));
  EXPECT_FALSE(fs::exists(down));

  ASSERT_TRUE(emu_->put_object("from-bucket", "obj", v1).ok());
  emu_->after_next("objects.get", overwrite);
  r = run(env_, "cp gs://from-bucket/obj s3://to-bucket/obj");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("changed or was deleted during the copy"));
  EXPECT_FALSE(emu_->get_object_data("to-bucket", "obj").ok());
  for (const auto& entry : fs::directory_iterator(work_.path())) {
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr("dataflux-cp"))) << entry.path();
  }
}

// On a terminal the progress line is drawn and cleared before the summary; in a pipe there is
// no control sequence at all; -q prints neither line nor summary.
TEST_F(CliEmulatorTest, ProgressOnATerminalOnlyAndQuietWithQ) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(emu_->put_object("from-bucket", "t/" + std::to_string(i), "x").ok());
  }
  const std::string down = work_.path() + "/t";
  CliRun r = run_on_terminal(env_, "cp -r gs://from-bucket/t " + down + "1/");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\r\x1b[KCopied 5 objects"));
  r = run(env_, "cp -r gs://from-bucket/t " + down + "2/");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Copied 5 objects"));
  EXPECT_THAT(r.output, Not(HasSubstr("\x1b")));
  r = run_on_terminal(env_, "-q cp -r gs://from-bucket/t " + down + "3/");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "");
}

// pack draws the live line on a terminal (one read stalls, so the pack outlasts a redraw),
// none in a pipe, and with -q prints only the shards' URLs.
TEST_F(CliEmulatorTest, PackProgressOnATerminalOnlyAndQuietWithQ) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(emu_->put_object("from-bucket", "t/c/" + std::to_string(i) + ".txt", "x").ok());
  }
  emu_->inject_fault("objects.media", emulator::Fault::stall(absl::Milliseconds(1500)));
  CliRun r = run_on_terminal(env_, "pack gs://from-bucket/t gs://to-bucket/t1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(emu_->pending_faults("objects.media"), 0u);
  EXPECT_THAT(r.output, HasSubstr("\r\x1b[K["));
  EXPECT_THAT(r.output, HasSubstr(" objects] "));
  // The line is cleared before the URLs, then the summary (the terminal ends lines in \r\n).
  EXPECT_THAT(r.output, HasSubstr("\r\x1b[Kgs://to-bucket/t1-000000.tar\r\nPacked 5 objects"));

  r = run(env_, "pack gs://from-bucket/t gs://to-bucket/t2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Packed 5 objects"));
  EXPECT_THAT(r.output, Not(HasSubstr("\x1b")));

  r = run_on_terminal(env_, "pack gs://from-bucket/t gs://to-bucket/t3 -q");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "gs://to-bucket/t3-000000.tar\r\n");  // the terminal's line ending
}

// A command line pack cannot use exits 2, says what was wrong, and writes nothing.
TEST_F(CliEmulatorTest, PackUsageErrorsExit2) {
  ASSERT_TRUE(emu_->put_object("from-bucket", "u/c/1.txt", "x").ok());
  const std::string ok = " gs://from-bucket/u gs://to-bucket/s";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"pack", "SRC is required"},
      {"pack gs://from-bucket/u", "DEST is required"},
      {"pack gs:/from-bucket/u gs://to-bucket/s", "did you mean 'gs://from-bucket/u'"},
      {"pack gs://from-bucket/u gs:/to-bucket/s", "did you mean 'gs://to-bucket/s'"},
      {"pack --compression bz2" + ok, "bz2"},
      {"pack --maxsize 1.5" + ok, "not a whole number of bytes"},
      {"pack --maxsize 0" + ok, "must be positive"},
      {"pack --maxsize 10XB" + ok, "unknown unit"},
      {"pack --maxcount 0" + ok, "must be at least 1"},
      {"pack --seed -1" + ok, "'-1' is not a whole number"},
      {"pack --no-such-flag" + ok, "--no-such-flag"},
  };
  for (const auto& [args, message] : cases) {
    CliRun r = run(env_, args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(message)) << args;
  }
  EXPECT_TRUE(emu_->list_objects("to-bucket").empty());

  for (const char* help : {"help pack", "pack --help"}) {
    CliRun r = run(env_, help);
    EXPECT_EQ(r.exit_code, 0) << help << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("pack [OPTIONS] SRC DEST")) << help;
    EXPECT_THAT(r.output, HasSubstr("--maxsize")) << help;
  }
  EXPECT_THAT(run(env_, "help").output, HasSubstr("pack"));
}

// perfdiag measures, suggests options, and leaves nothing behind.
TEST_F(CliEmulatorTest, PerfdiagSuggestsOptionsAndCleansUp) {
  CliRun r = run(env_, "perfdiag gs://from-bucket/diag/ -s 1048576 -n 20");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line : {"latency (median of 5, 1 KiB)", "upload 1.0 MiB: one stream",
                           "download 1.0 MiB: one stream", "small objects (20 x 64.0 KiB)",
                           "listing: 20 objects", "suggested options for gs://from-bucket/diag/",
                           "DatasetOptions().max_requests_in_flight("}) {
    EXPECT_THAT(r.output, HasSubstr(line));
  }
  EXPECT_TRUE(emu_->list_objects("from-bucket").empty());
  r = run(env_, "perfdiag gs://no-such-bucket/");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("no-such-bucket"));
}

TEST(CliProgressTest, TheLiveLineCountsObjectsAndBytes) {
  cli::Io io;
  io.quiet = true;
  cli::Progress progress(io, "Copied", 3, 3 << 20);
  progress.object_done();
  progress.object_failed();
  progress.add_bytes(1 << 20);
  EXPECT_THAT(progress.line(), ::testing::StartsWith("[2/3 objects] 1.0 MiB/3.0 MiB, "));
  EXPECT_THAT(progress.line(), HasSubstr("ETA"));
}

// pack's totals: unknown at the start, then the objects' count and never their bytes; the ETA
// comes from the rate of objects.
TEST(CliProgressTest, UnknownTotalsAreLeftOut) {
  cli::Io io;
  io.quiet = true;
  cli::Progress progress(io, "Packed", cli::Progress::kUnknown, cli::Progress::kUnknown);
  EXPECT_THAT(progress.line(), StartsWith("[0 objects] 0 B, "));
  EXPECT_THAT(progress.line(), Not(HasSubstr("ETA")));
  progress.set_total_objects(4);
  progress.object_done();
  progress.add_bytes(1 << 20);
  EXPECT_THAT(progress.line(), StartsWith("[1/4 objects] 1.0 MiB, "));
  EXPECT_THAT(progress.line(), HasSubstr("ETA"));
}

TEST(CliSizeTest, ParsesSizesAsPeopleWriteThem) {
  const std::vector<std::pair<std::string, std::uint64_t>> good = {
      {"100000000", 100000000},
      {"1e8", 100000000},
      {"1E8", 100000000},
      {"2.5e3", 2500},
      {"100MB", 100000000},
      {"100M", 100000000},
      {"100mb", 100000000},
      {"1.5GB", 1500000000},
      {"64KiB", 65536},
      {"64kib", 65536},
      {"1.5GiB", 1610612736},
      {"2Ti", 2199023255552},
      {"512B", 512},
      {"5 MB", 5000000},
      {"0", 0},
      {".5k", 500},
      {"18446744073709551615", 18446744073709551615u},
  };
  for (const auto& [text, bytes] : good) {
    auto parsed = cli::parse_size(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    EXPECT_EQ(*parsed, bytes) << text;
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "not a number"},
      {"MB", "not a number"},
      {"-1", "not a number"},
      {"1.5", "not a whole number of bytes"},
      {"0.1KiB", "not a whole number of bytes"},
      {"1e-1", "not a whole number of bytes"},
      {"18446744073709551616", "more than 2^64-1"},
      {"20e18", "more than 2^64-1"},
      {"16EiB", "unknown unit"},
      {"1e", "unknown unit"},
      {"10XB", "unknown unit"},
      {"1bb", "unknown unit"},
      {"1e1000", "exponent out of range"},
      {"1234567890123456789012345", "too many digits"},
  };
  for (const auto& [text, why] : bad) {
    auto parsed = cli::parse_size(text);
    ASSERT_FALSE(parsed.ok()) << text << " parsed as " << *parsed;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(why)) << text;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("'" + text + "'")) << text;
  }
}

}  // namespace
}  // namespace dataflux::testing
