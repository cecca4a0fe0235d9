#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "dataflux/open_store.h"
#include "emulator/emulator.h"

namespace dataflux {
namespace {

namespace fs = std::filesystem;

TEST(OpenStore, FileUrlsAndPathsOpenTheLocalStore) {
  char tmpl[] = "/tmp/dataflux_open_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  auto url = StorageUrl::parse("file://" + dir + "/x.txt");
  ASSERT_TRUE(url.ok());
  auto store = open_store(*url);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->backend(), "local");
  WriteObjectRequest req;
  req.bucket = url->bucket;
  req.object = url->object;
  ASSERT_TRUE((*store)->write_object(req, "hi").ok());
  std::ifstream in(dir + "/x.txt");
  std::string content;
  in >> content;
  EXPECT_EQ(content, "hi");
  StoreOptions s3_options;
  s3_options.s3.anonymous = true;
  s3_options.s3.endpoint = "http://127.0.0.1:1";
  auto s3 = open_store("s3://bucket/key", s3_options);
  ASSERT_TRUE(s3.ok()) << s3.status();
  EXPECT_EQ((*s3)->backend(), "s3");
  fs::remove_all(dir);
}

// Each store names its objects and says what it can do; the engine asks these, never names.
TEST(OpenStore, EachStoreFormatsItsUrlsAndStatesWhetherItIsRemote) {
  StoreOptions options;
  options.s3.anonymous = true;
  options.s3.endpoint = "http://127.0.0.1:1";
  options.gcs.endpoint = "http://127.0.0.1:1";
  options.gcs.anonymous = true;
  auto s3 = open_store("s3://bucket/key", options);
  ASSERT_TRUE(s3.ok()) << s3.status();
  EXPECT_EQ((*s3)->url("bucket", "a/b c"), "s3://bucket/a/b c");
  EXPECT_EQ((*s3)->url("bucket", ""), "s3://bucket");
  EXPECT_TRUE((*s3)->capabilities().remote);
  auto gcs = open_store("gs://bucket/key", options);
  ASSERT_TRUE(gcs.ok()) << gcs.status();
  EXPECT_EQ((*gcs)->url("bucket", "a/b"), "gs://bucket/a/b");
  EXPECT_EQ((*gcs)->url("bucket", ""), "gs://bucket");
  EXPECT_TRUE((*gcs)->capabilities().remote);
  auto local = open_store("/tmp/dataflux-url-test/x");
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ((*local)->url("/tmp/root", "a/b"), "file:///tmp/root/a/b");
  EXPECT_EQ((*local)->url("/tmp/root/", "a"), "file:///tmp/root/a");
  EXPECT_EQ((*local)->url("/tmp/root", ""), "file:///tmp/root");
  EXPECT_FALSE((*local)->capabilities().remote);
}

// Points gs:// at an in-process emulator through the environment, as a user's job would, so
// the stores under test are the ones open_store builds for the default endpoint.
class OpenGcsStore : public ::testing::Test {
 protected:
  void SetUp() override {
    auto emu = emulator::Emulator::start({});
    ASSERT_TRUE(emu.ok()) << emu.status();
    emu_ = *std::move(emu);
    ASSERT_TRUE(emu_->create_bucket("open-store-test").ok());
    ASSERT_TRUE(emu_->put_object("open-store-test", "x", "hello").ok());
    const char* old = std::getenv("STORAGE_EMULATOR_HOST");
    if (old != nullptr) old_host_ = old;
    setenv("STORAGE_EMULATOR_HOST", emu_->endpoint().c_str(), 1);
  }
  void TearDown() override {
    if (old_host_) {
      setenv("STORAGE_EMULATOR_HOST", old_host_->c_str(), 1);
    } else {
      unsetenv("STORAGE_EMULATOR_HOST");
    }
  }
  absl::Status read_x(ObjectStore& store) {
    ReadObjectRequest request;
    request.bucket = "open-store-test";
    request.object = "x";
    char buffer[5];
    return store.read_object(request, buffer, sizeof(buffer)).status();
  }

  std::unique_ptr<emulator::Emulator> emu_;
  std::optional<std::string> old_host_;
};

StoreOptions fast_retries(int attempts) {
  StoreOptions options;
  options.gcs.retry.max_attempts = attempts;
  options.gcs.retry.initial_backoff = std::chrono::milliseconds(1);
  options.gcs.retry.max_backoff = std::chrono::milliseconds(2);
  return options;
}

TEST_F(OpenGcsStore, RetryOptionsApplyEvenAfterTheDefaultStoreExists) {
  // The default store is made first, as a dataset or checkpoint opened earlier would.
  auto shared = open_store("gs://open-store-test/");
  ASSERT_TRUE(shared.ok()) << shared.status();
  ASSERT_TRUE(read_x(**shared).ok());

  // One attempt: the injected 503 must reach the caller, not be retried away.
  auto once = open_store("gs://open-store-test/", fast_retries(1));
  ASSERT_TRUE(once.ok()) << once.status();
  EXPECT_NE(once->get(), shared->get());
  emu_->inject_fault("objects.media", emulator::Fault::status(503));
  absl::Status status = read_x(**once);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;

  // Three attempts: the same fault is retried away.
  auto thrice = open_store("gs://open-store-test/", fast_retries(3));
  ASSERT_TRUE(thrice.ok()) << thrice.status();
  emu_->inject_fault("objects.media", emulator::Fault::status(503));
  EXPECT_TRUE(read_x(**thrice).ok());
}

TEST_F(OpenGcsStore, EqualOptionsShareOneStoreAndAnyDifferenceDoesNot) {
  auto a = open_store("gs://open-store-test/", fast_retries(2));
  auto b = open_store("gs://other-bucket/", fast_retries(2));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());  // one connection pool per option set

  StoreOptions transport = fast_retries(2);
  transport.gcs.transport.stall_timeout = std::chrono::milliseconds(1234);
  StoreOptions deadline = fast_retries(2);
  deadline.gcs.retry.deadline = std::chrono::milliseconds(999);
  StoreOptions auth = fast_retries(2);
  auth.gcs.auth.metadata_timeout = std::chrono::milliseconds(7);
  for (const StoreOptions& options : {transport, deadline, auth}) {
    auto other = open_store("gs://open-store-test/", options);
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_NE(other->get(), a->get());
  }
}

// DatasetOptions::retry goes through this: every backend gets it, unless the caller set that
// backend's own retry in store_options.
TEST(OpenStore, WithRetryAppliesToEveryBackendTheCallerLeftAtItsDefault) {
  RetryOptions mine;
  mine.max_attempts = 2;
  mine.initial_backoff = std::chrono::milliseconds(3);
  StoreOptions plain = with_retry(StoreOptions{}, mine);
  EXPECT_EQ(plain.gcs.retry, mine);
  EXPECT_EQ(plain.s3.retry, mine);

  StoreOptions callers;
  callers.gcs.retry.max_attempts = 7;
  StoreOptions merged = with_retry(callers, mine);
  EXPECT_EQ(merged.gcs.retry.max_attempts, 7);  // the caller's, not overwritten
  EXPECT_EQ(merged.s3.retry, mine);

  EXPECT_EQ(with_retry(callers, RetryOptions{}).gcs.retry.max_attempts, 7);
}

// Any retry field makes a different S3 store (a backoff too, not only attempts and deadline).
TEST(OpenStore, S3StoresDifferingInAnyRetryFieldAreNotShared) {
  StoreOptions a;
  a.s3.endpoint = "http://127.0.0.1:1";
  a.s3.region = "us-east-1";
  a.s3.anonymous = true;
  StoreOptions b = a;
  b.s3.retry.initial_backoff = std::chrono::milliseconds(1);
  StoreOptions c = a;
  auto sa = open_store("s3://bucket/x", a);
  auto sb = open_store("s3://bucket/x", b);
  auto sc = open_store("s3://bucket/x", c);
  ASSERT_TRUE(sa.ok() && sb.ok() && sc.ok());
  EXPECT_NE(sa->get(), sb->get());
  EXPECT_EQ(sa->get(), sc->get());
}

// As users hit it: a URL used in the parent (its store cached, its transport's threads
// running), fork(), the same URL in the child. The child's requests must not go to the
// parent's transport, whose threads do not exist there.
TEST_F(OpenGcsStore, AStoreUsedBeforeForkWorksInTheChild) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "fork() of a threaded process under a sanitizer runtime can deadlock in it";
#endif
  auto parent = open_store("gs://open-store-test/");
  ASSERT_TRUE(parent.ok()) << parent.status();
  ASSERT_TRUE(read_x(**parent).ok());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(30);  // a hang ends the child with SIGALRM, which the parent reports
    auto store = open_store("gs://open-store-test/");
    const bool same = store.ok() && store->get() == parent->get();
    const bool read = store.ok() && read_x(**store).ok();
    const bool again = read_x(**parent).ok();  // the pointer kept from before fork() too
    _exit(same && read && again ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_FALSE(WIFSIGNALED(status)) << "the child hung (signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(read_x(**parent).ok());  // and the parent's store still works
}

TEST_F(OpenGcsStore, DefaultStoreFollowsTheEmulatorEnvironment) {
  auto first = open_store("gs://open-store-test/");
  ASSERT_TRUE(first.ok());
  auto second_emu = emulator::Emulator::start({});
  ASSERT_TRUE(second_emu.ok());
  ASSERT_TRUE((*second_emu)->create_bucket("open-store-test").ok());
  ASSERT_TRUE((*second_emu)->put_object("open-store-test", "x", "world").ok());
  setenv("STORAGE_EMULATOR_HOST", (*second_emu)->endpoint().c_str(), 1);
  auto second = open_store("gs://open-store-test/");
  ASSERT_TRUE(second.ok());
  EXPECT_NE(first->get(), second->get());
  EXPECT_TRUE(read_x(**second).ok());
}

}  // namespace
}  // namespace dataflux
