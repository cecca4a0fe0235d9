// The `dataflux` command-line tool, run as a program against an in-process emulator (gs:// and
// s3://) and local directories: cleanup; ls, du, stat, cat, cp, mv, rm on every backend;
// partial failures; progress on a terminal and its absence in a pipe; usage errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "emulator/emulator.h"
#include "tools/cli_run.h"

namespace dataflux::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class CliGcsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto emu = emulator::Emulator::start({});
    ASSERT_TRUE(emu.ok()) << emu.status();
    emu_ = *std::move(emu);
    ASSERT_TRUE(emu_->create_bucket("cli-bucket").ok());
    env_ = "STORAGE_EMULATOR_HOST=" + emu_->endpoint();
  }
  void put(const std::string& name) {
    ASSERT_TRUE(emu_->put_object("cli-bucket", name, "data").ok());
  }
  std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const auto& o : emu_->list_objects("cli-bucket")) out.push_back(o.name);
    return out;
  }

  std::unique_ptr<emulator::Emulator> emu_;
  std::string env_;
};

TEST_F(CliGcsTest, CleanupDeletesBothKindsOfTemporariesAndNothingElse) {
  put("dataflux-composed-objects/0123456789abcdef");
  put("ckpt/epoch-3.pt.dataflux-part-0123456789abcdef-00001");
  put("ckpt/epoch-3.pt.dataflux-part-0123456789abcdef-c1-00000");
  put("ckpt/epoch-3.pt");
  put("train/0001.jpg");

  CliRun dry = run(env_, "cleanup gs://cli-bucket --dry-run --min-age 0");
  ASSERT_EQ(dry.exit_code, 0) << dry.output;
  EXPECT_THAT(dry.output, HasSubstr("would delete gs://cli-bucket/dataflux-composed-objects/"));
  EXPECT_THAT(dry.output, HasSubstr("would delete 3 temporary objects"));
  EXPECT_EQ(names().size(), 5u);  // a dry run deletes nothing

  CliRun young = run(env_, "cleanup gs://cli-bucket/");  // by default only those an hour old
  ASSERT_EQ(young.exit_code, 0) << young.output;
  EXPECT_THAT(young.output, HasSubstr("deleted 0 temporary objects"));
  EXPECT_EQ(names().size(), 5u);  // too young: a running job may own them

  CliRun done = run(env_, "cleanup gs://cli-bucket/ --min-age 0");
  ASSERT_EQ(done.exit_code, 0) << done.output;
  EXPECT_THAT(
      done.output,
      HasSubstr("deleted gs://cli-bucket/ckpt/epoch-3.pt.dataflux-part-0123456789abcdef-00001"));
  EXPECT_THAT(done.output, HasSubstr("deleted 3 temporary objects"));
  EXPECT_THAT(names(), UnorderedElementsAre("ckpt/epoch-3.pt", "train/0001.jpg"));
}

TEST_F(CliGcsTest, CleanupUnderAPrefixLeavesTheRestAlone) {
  put("dataflux-composed-objects/0123456789abcdef");
  put("ckpt/a.pt.dataflux-part-0123456789abcdef-00001");
  put("other/b.pt.dataflux-part-0123456789abcdef-00001");
  CliRun r = run(env_, "cleanup gs://cli-bucket/ckpt/ --min-age 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("deleted 1 temporary object\n"));
  EXPECT_THAT(names(), UnorderedElementsAre("dataflux-composed-objects/0123456789abcdef",
                                            "other/b.pt.dataflux-part-0123456789abcdef-00001"));
}

TEST_F(CliGcsTest, LsPrintsOneLevelOrEverythingWithR) {
  put("x/one");
  put("x/sub/two");
  put("y/three");
  CliRun r = run(env_, "ls gs://cli-bucket/x/");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "gs://cli-bucket/x/one\ngs://cli-bucket/x/sub/\n");
  r = run(env_, "ls gs://cli-bucket/x");  // no slash: the "directory" x/
  EXPECT_EQ(r.output, "gs://cli-bucket/x/one\ngs://cli-bucket/x/sub/\n");
  r = run(env_, "ls -r gs://cli-bucket");
  EXPECT_EQ(r.output,
            "gs://cli-bucket/x/one\ngs://cli-bucket/x/sub/two\ngs://cli-bucket/y/three\n");
  r = run(env_, "ls gs://cli-bucket/x/one");
  EXPECT_EQ(r.output, "gs://cli-bucket/x/one\n");
  r = run(env_, "ls gs://cli-bucket/nothing/");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("gs://cli-bucket/nothing/ matched no objects"));
}

TEST_F(CliGcsTest, ErrorsNameTheProblem) {
  CliRun r = run(env_, "cleanup gs://no-such-bucket/");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("no-such-bucket"));
  r = run(env_, "cleanup");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("Usage"));
  r = run(env_, "cleanup gs://cli-bucket/ --min-age soon");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--min-age"));
  r = run(env_, "frobnicate gs://cli-bucket/");
  EXPECT_EQ(r.exit_code, 2);
  // A mistyped URL is a usage error, named; so are a missing argument and an unknown option.
  r = run(env_, "ls gs:/cli-bucket/");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("did you mean 'gs://cli-bucket/'"));
  r = run(env_, "cp gs://cli-bucket/x");
  EXPECT_EQ(r.exit_code, 2);
  r = run(env_, "ls --frobnicate gs://cli-bucket/");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--frobnicate"));
  r = run(env_, "cp -j 0 a b");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(CliTest, VersionAndHelp) {
  CliRun r = run("", "--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("dataflux " DATAFLUX_VERSION));
  r = run("", "help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* command : {"ls", "du", "stat", "cat", "cp", "mv", "rm", "perfdiag", "cleanup"}) {
    EXPECT_THAT(r.output, HasSubstr(command));
  }
  r = run("", "help cp");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("--no-clobber"));
  r = run("", "du --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("--human-readable"));
  r = run("", "help frobnicate");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(CliLocalTest, CleanupWorksOnALocalDirectory) {
  char tmpl[] = "/tmp/dataflux-cli-test-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::filesystem::create_directories(dir + "/ckpt");
  for (const char* name : {"/ckpt/m.pt", "/ckpt/m.pt.dataflux-part-0123456789abcdef-00007"}) {
    std::ofstream(dir + name) << "bytes";
  }
  CliRun r = run("", "cleanup file://" + dir + "/ --min-age 0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("deleted 1 temporary object\n"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/ckpt/m.pt"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/ckpt/m.pt.dataflux-part-0123456789abcdef-00007"));
  r = run("", "ls " + dir + "/ckpt/");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "file://" + dir + "/ckpt/m.pt\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dataflux::testing
