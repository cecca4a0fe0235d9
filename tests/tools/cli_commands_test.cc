// The `dataflux` commands on each backend (gs:// and s3:// on the emulator, file:// on a
// temporary directory): cp -r up and down with spaces and non-ASCII names, ls -l/--json, du,
// stat, cat ranges, -n, mv, rm -r; copies between clouds; one object failing among many;
// progress on a terminal, none in a pipe.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli/progress.h"
#include "dataflux/crc32c.h"
#include "emulator/emulator.h"
#include "tools/cli_run.h"

namespace dataflux::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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

}  // namespace
}  // namespace dataflux::testing
