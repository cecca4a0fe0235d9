#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dataflux/crc32c.h"
#include "dataflux/local.h"
#include "local/local_files.h"

namespace dataflux {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class LocalStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dataflux_local_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    auto store = make_local_store(root_, LocalOptions{/*fsync=*/false});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *store;
  }
  void TearDown() override { fs::remove_all(root_); }

  ObjectMetadata put(const std::string& name, std::string_view data) {
    WriteObjectRequest req;
    req.bucket = root_;
    req.object = name;
    auto m = store_->write_object(req, data);
    EXPECT_TRUE(m.ok()) << name << ": " << m.status();
    return m.ok() ? *m : ObjectMetadata{};
  }

  std::string get(const std::string& name) {
    auto meta = store_->get_object_metadata(root_, name);
    EXPECT_TRUE(meta.ok()) << meta.status();
    std::string data(meta.ok() ? meta->size : 0, '\0');
    ReadObjectRequest req;
    req.bucket = root_;
    req.object = name;
    auto r = store_->read_object(req, data.data(), data.size());
    EXPECT_TRUE(r.ok()) << r.status();
    return data;
  }

  std::vector<std::string> list_all(ListObjectsRequest req, int* pages = nullptr) {
    req.bucket = root_;
    std::vector<std::string> names;
    int n = 0;
    for (;;) {
      auto page = store_->list_objects(req);
      EXPECT_TRUE(page.ok()) << page.status();
      if (!page.ok()) break;
      ++n;
      for (const auto& o : page->objects) names.push_back(o.name);
      for (const auto& p : page->prefixes) names.push_back("prefix:" + p);
      if (page->next_page_token.empty()) break;
      req.page_token = page->next_page_token;
    }
    if (pages) *pages = n;
    return names;
  }

  std::string root_;
  std::shared_ptr<ObjectStore> store_;
};

// A name with control characters (here a terminal escape and a tab) cannot forge log lines or
// recolour a terminal: messages and URLs show them as \xNN.
TEST_F(LocalStoreTest, ControlCharactersInNamesAreEscapedInMessagesAndUrls) {
  const std::string name = "evil\x1b[31m\tname";
  auto missing = store_->get_object_metadata(root_, name);
  ASSERT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  const std::string message(missing.status().message());
  EXPECT_THAT(message, HasSubstr("evil\\x1b[31m\\x09name")) << message;
  EXPECT_EQ(message.find('\x1b'), std::string::npos);
  EXPECT_EQ(message.find('\t'), std::string::npos);
  EXPECT_EQ(store_->url(root_, name), "file://" + root_ + "/evil\\x1b[31m\\x09name");
  EXPECT_EQ(store_->url(root_, ""), "file://" + root_);
  EXPECT_EQ(store_->url("/", "x"), "file:///x");
  put(name, "stored as named");  // the name itself is not changed, only how it is shown
  EXPECT_EQ(get(name), "stored as named");
}

TEST_F(LocalStoreTest, WriteReadRoundTripWithChecksumAndGeneration) {
  std::string data(100000, '\0');
  std::mt19937 rng(1);
  for (auto& c : data) c = static_cast<char>(rng());
  ObjectMetadata m = put("dir/sub/file.bin", data);
  EXPECT_EQ(m.size, data.size());
  EXPECT_EQ(m.crc32c, crc32c(data));
  EXPECT_GT(m.generation, 0);
  EXPECT_EQ(get("dir/sub/file.bin"), data);
  auto meta = store_->get_object_metadata(root_, "dir/sub/file.bin");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->generation, m.generation);
  EXPECT_EQ(meta->crc32c, crc32c(data));

  // Overwrite: new generation, new bytes.
  ObjectMetadata m2 = put("dir/sub/file.bin", "short");
  EXPECT_NE(m2.generation, m.generation);
  EXPECT_EQ(get("dir/sub/file.bin"), "short");
}

TEST_F(LocalStoreTest, RangedReadsAndBounds) {
  put("obj", "0123456789");
  ReadObjectRequest req;
  req.object = "obj";
  req.offset = 3;
  req.length = 4;
  char buf[16] = {};
  auto r = store_->read_object(req, buf, sizeof(buf));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::string(buf, r->bytes), "3456");
  EXPECT_EQ(r->object_size, 10u);
  EXPECT_FALSE(r->crc32c_verified);  // a partial read cannot be checked

  req.offset = 11;
  req.length.reset();
  auto past = store_->read_object(req, buf, sizeof(buf));
  EXPECT_EQ(past.status().code(), absl::StatusCode::kOutOfRange);

  req.offset = 0;
  auto small = store_->read_object(req, buf, 5);
  EXPECT_EQ(small.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(small.status().message()), HasSubstr("10 bytes to read"));

  std::string streamed;
  req.offset = 2;
  auto s = store_->read_object(req, [&](const char* d, std::size_t n) {
    streamed.append(d, n);
    return absl::OkStatus();
  });
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(streamed, "23456789");
}

TEST_F(LocalStoreTest, ZeroByteObjects) {
  ObjectMetadata m = put("empty", "");
  EXPECT_EQ(m.size, 0u);
  ReadObjectRequest req;
  req.object = "empty";
  auto r = store_->read_object(req, nullptr, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->bytes, 0u);
  EXPECT_TRUE(r->crc32c_verified);
}

TEST_F(LocalStoreTest, ListingIsInByteOrderAcrossDirectories) {
  // '-' (0x2d) < '/' (0x2f) < '0' (0x30): a naive per-directory walk gets this wrong.
  for (const char* n : {"a/b", "a-c", "a0", "a/a/z", "b", "\xc3\xa9t\xc3\xa9", "A"}) put(n, n);
  auto names = list_all({});
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(names, sorted);
  EXPECT_THAT(names, ElementsAre("A", "a-c", "a/a/z", "a/b", "a0", "b", "\xc3\xa9t\xc3\xa9"));
}

TEST_F(LocalStoreTest, PrefixOffsetsDelimiterAndPagination) {
  for (int i = 0; i < 25; ++i) put("data/" + std::to_string(100 + i), "x");
  put("data/sub/a", "x");
  put("data/sub/b", "x");
  put("other", "x");
  ListObjectsRequest req;
  req.prefix = "data/";
  req.max_results = 7;
  int pages = 0;
  auto all = list_all(req, &pages);
  EXPECT_EQ(all.size(), 27u);
  EXPECT_EQ(pages, 4);

  req.delimiter = "/";
  req.max_results = 1000;
  auto rolled = list_all(req);
  EXPECT_EQ(rolled.size(), 26u);
  EXPECT_EQ(rolled.back(), "prefix:data/sub/");

  ListObjectsRequest range;
  range.start_offset = "data/105";
  range.end_offset = "data/110";
  EXPECT_THAT(list_all(range),
              ElementsAre("data/105", "data/106", "data/107", "data/108", "data/109"));
}

TEST_F(LocalStoreTest, GenerationPreconditions) {
  WriteObjectRequest req;
  req.object = "p";
  req.if_generation_match = 0;
  auto first = store_->write_object(req, "one");
  ASSERT_TRUE(first.ok()) << first.status();
  auto again = store_->write_object(req, "two");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  req.if_generation_match = first->generation;
  auto replaced = store_->write_object(req, "two");
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  auto stale = store_->write_object(req, "three");
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(get("p"), "two");

  DeleteObjectRequest del;
  del.object = "p";
  del.if_generation_match = first->generation;
  EXPECT_EQ(store_->delete_object(del).code(), absl::StatusCode::kFailedPrecondition);
  del.if_generation_match = replaced->generation;
  EXPECT_TRUE(store_->delete_object(del).ok());
  EXPECT_EQ(store_->get_object_metadata(root_, "p").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(LocalStoreTest, ConcurrentCreateIfAbsentHasExactlyOneWinner) {
  std::atomic<int> wins{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      WriteObjectRequest req;
      req.object = "race";
      req.if_generation_match = 0;
      if (store_->write_object(req, std::to_string(t)).ok()) ++wins;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wins.load(), 1);
  EXPECT_EQ(list_all({}), std::vector<std::string>{"race"});  // no temporary files left
}

TEST_F(LocalStoreTest, NoEscapeFromTheRoot) {
  for (const char* bad :
       {"../outside", "a/../../x", "/etc/passwd", "a//b", "./a", "dir/", ".dataflux-tmp-x"}) {
    WriteObjectRequest req;
    req.object = bad;
    auto w = store_->write_object(req, "x");
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    ReadObjectRequest r;
    r.object = bad;
    char c;
    EXPECT_FALSE(store_->read_object(r, &c, 1).ok()) << bad;
  }
  // A symbolic link inside the root that points outside it is refused.
  std::string outside = root_ + "-outside";
  fs::create_directories(outside);
  std::ofstream(outside + "/secret") << "secret";
  fs::create_symlink(outside, root_ + "/link");
  ReadObjectRequest r;
  r.object = "link/secret";
  char buf[16];
  auto read = store_->read_object(r, buf, sizeof(buf));
  EXPECT_EQ(read.status().code(), absl::StatusCode::kPermissionDenied) << read.status();
  fs::remove_all(outside);

  auto other = store_->get_object_metadata("/somewhere/else", "x");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
}

// Writes, deletes and listings never reach outside the root through symbolic links, with
// openat2 (RESOLVE_BENEATH) and without it (component by component, O_NOFOLLOW), and loops of
// links end.
TEST_F(LocalStoreTest, WritesDeletesAndListingsNeverLeaveTheRootThroughSymlinks) {
  const std::string outside = root_ + "-outside";
  fs::create_directories(outside + "/sub");
  std::ofstream(outside + "/victim") << "victim";
  fs::create_symlink(outside, root_ + "/link");                   // a directory out
  fs::create_symlink(outside + "/victim", root_ + "/file-link");  // a file out
  fs::create_symlink(root_, root_ + "/loop");                     // the root itself
  put("a/b/real", "real");
  fs::create_symlink("..", root_ + "/a/b/up");  // a loop inside the root
  fs::create_symlink("a", root_ + "/alias");    // a directory inside the root
  for (bool openat2 : {true, false}) {
    SCOPED_TRACE(openat2 ? "openat2" : "O_NOFOLLOW");
    internal::set_openat2_enabled_for_testing(openat2);
    for (const char* name : {"link/new", "link/sub/deeper/new"}) {
      WriteObjectRequest req;
      req.object = name;
      auto w = store_->write_object(req, "x");
      EXPECT_EQ(w.status().code(), absl::StatusCode::kPermissionDenied) << name << w.status();
      EXPECT_THAT(std::string(w.status().message()), HasSubstr("symbolic link")) << w.status();
    }
    EXPECT_FALSE(fs::exists(outside + "/new"));
    EXPECT_FALSE(fs::exists(outside + "/sub/deeper"));
    ComposeObjectRequest compose;
    compose.destination = "link/composed";
    compose.sources = {{"a/b/real", std::nullopt}};
    EXPECT_FALSE(store_->compose_object(compose).ok());
    EXPECT_FALSE(fs::exists(outside + "/composed"));

    DeleteObjectRequest del;
    del.object = "link/victim";
    EXPECT_FALSE(store_->delete_object(del).ok());
    del.object = "file-link";
    EXPECT_FALSE(store_->delete_object(del).ok());
    EXPECT_TRUE(fs::exists(outside + "/victim"));

    // Only names below the root, each loop entered once at most.
    EXPECT_THAT(list_all({}), ElementsAre("a/b/real", "alias/b/real"));
    EXPECT_EQ(get("alias/b/real"), "real");

    // A link that stays inside the root is followed by openat2 and refused without it.
    WriteObjectRequest inside;
    inside.object = "alias/b/via-alias";
    auto w = store_->write_object(inside, "y");
    if (openat2 && internal::openat2_in_use()) {
      EXPECT_TRUE(w.ok()) << w.status();
      EXPECT_TRUE(fs::exists(root_ + "/a/b/via-alias"));
      DeleteObjectRequest d;
      d.object = "alias/b/via-alias";
      EXPECT_TRUE(store_->delete_object(d).ok());
    } else {
      EXPECT_EQ(w.status().code(), absl::StatusCode::kPermissionDenied) << w.status();
    }
    EXPECT_FALSE(fs::exists(root_ + "/a/b/via-alias"));
    EXPECT_TRUE(fs::is_directory(root_ + "/a/b"));  // not removed through the alias
  }
  internal::set_openat2_enabled_for_testing(true);
  // Writing over a link replaces the link, never the file it points to.
  put("file-link", "mine");
  EXPECT_EQ(get("file-link"), "mine");
  std::ifstream victim(outside + "/victim");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(victim), {}), "victim");
  fs::remove_all(outside);
}

// A save that crashed leaves its temporary file: hidden from listings, but reported as an
// unfinished write of its object and removed on request, as S3's incomplete multipart uploads.
TEST_F(LocalStoreTest, ACrashedWritesTemporaryFileIsAPendingUpload) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    WriteObjectRequest req;
    req.object = "ckpt/step-1/model.pt";
    auto session = store_->start_resumable_write(req);
    if (!session.ok() || !(*session)->write(std::string(1000, 'x')).ok()) _exit(1);
    _exit(0);  // crashed: no destructor cancels the session
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  put("ckpt/other.pt", "done");

  EXPECT_THAT(list_all({}), ElementsAre("ckpt/other.pt"));
  auto pending = store_->list_pending_uploads(root_, "ckpt/");
  ASSERT_TRUE(pending.ok()) << pending.status();
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].object, "ckpt/step-1/model.pt");
  EXPECT_LE((*pending)[0].started, std::chrono::system_clock::now());
  EXPECT_GT((*pending)[0].started, std::chrono::system_clock::now() - std::chrono::minutes(10));
  // Under another prefix, or a prefix of the object's name: found only where it belongs.
  EXPECT_TRUE(store_->list_pending_uploads(root_, "other/")->empty());
  EXPECT_EQ(store_->list_pending_uploads(root_, "ckpt/step-1/mo")->size(), 1u);

  ASSERT_TRUE(store_->abort_pending_upload(root_, (*pending)[0]).ok());
  EXPECT_TRUE(store_->list_pending_uploads(root_, "")->empty());
  EXPECT_FALSE(fs::exists(root_ + "/ckpt/step-1"));  // its empty directory went with it
  EXPECT_THAT(list_all({}), ElementsAre("ckpt/other.pt"));

  // An id that is not one of the store's temporary files is refused, never unlinked.
  PendingUpload forged;
  forged.object = "ckpt/other.pt";
  forged.id = "local:ckpt/other.pt";
  EXPECT_EQ(store_->abort_pending_upload(root_, forged).code(), absl::StatusCode::kInvalidArgument);
  forged.id = "local:../x/.dataflux-upload-1";
  EXPECT_EQ(store_->abort_pending_upload(root_, forged).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(get("ckpt/other.pt"), "done");
}

TEST_F(LocalStoreTest, DetectsCorruptionOfStoredBytes) {
  ObjectMetadata m = put("c", "hello world");
  std::string path = root_ + "/c";
  struct stat before;
  ASSERT_EQ(stat(path.c_str(), &before), 0);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3);
    f.put('X');  // flip a byte in place
  }
  // Restore the timestamp so the file still claims to be the same generation.
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  ReadObjectRequest req;
  req.object = "c";
  char buf[32];
  auto r = store_->read_object(req, buf, sizeof(buf));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("CRC32C mismatch"));

  req.expected_crc32c = m.crc32c.value() ^ 1;
  put("d", "abc");
  req.object = "d";
  EXPECT_EQ(store_->read_object(req, buf, sizeof(buf)).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST_F(LocalStoreTest, ResumableWriteSurvivesANewSessionObject) {
  WriteObjectRequest req;
  req.object = "big/upload.bin";
  auto s1 = store_->start_resumable_write(req);
  ASSERT_TRUE(s1.ok()) << s1.status();
  ASSERT_TRUE((*s1)->write("first half, ").ok());
  EXPECT_TRUE(list_all({}).empty());  // nothing visible before finish

  auto s2 = store_->resume_resumable_write(req, (*s1)->session_id());
  ASSERT_TRUE(s2.ok()) << s2.status();
  EXPECT_EQ((*s2)->persisted_size(), 12u);
  ASSERT_TRUE((*s2)->write("second half").ok());
  auto m = (*s2)->finish();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->crc32c, crc32c("first half, second half"));
  EXPECT_EQ(get("big/upload.bin"), "first half, second half");

  auto bogus = store_->resume_resumable_write(req, "local:../../etc/passwd");
  EXPECT_EQ(bogus.status().code(), absl::StatusCode::kInvalidArgument);

  auto s3 = store_->start_resumable_write(req);
  ASSERT_TRUE((*s3)->write("abandoned").ok());
  s3->reset();  // destroyed without finish: nothing published, nothing left behind
  EXPECT_EQ(get("big/upload.bin"), "first half, second half");
  int files = 0;
  for (auto& e : fs::recursive_directory_iterator(root_)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(LocalStoreTest, ComposeCopyAndDelete) {
  std::vector<ComposeSource> sources;
  std::string expected;
  for (int i = 0; i < 5; ++i) {
    std::string part = "part" + std::to_string(i) + ";";
    ObjectMetadata m = put("parts/" + std::to_string(i), part);
    sources.push_back({m.name, m.generation});
    expected += part;
  }
  ComposeObjectRequest compose;
  compose.destination = "composed";
  compose.sources = sources;
  auto c = store_->compose_object(compose);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(get("composed"), expected);
  EXPECT_EQ(c->crc32c, crc32c(expected));

  compose.sources[0].generation = 1;  // stale generation
  EXPECT_EQ(store_->compose_object(compose).status().code(), absl::StatusCode::kFailedPrecondition);
  compose.sources.assign(33, sources[0]);
  EXPECT_EQ(store_->compose_object(compose).status().code(), absl::StatusCode::kInvalidArgument);

  CopyObjectRequest copy;
  copy.source_object = "composed";
  copy.destination_object = "copies/one";
  auto cp = store_->copy_object(copy);
  ASSERT_TRUE(cp.ok()) << cp.status();
  EXPECT_EQ(get("copies/one"), expected);

  DeleteObjectRequest del;
  del.object = "copies/one";
  EXPECT_TRUE(store_->delete_object(del).ok());
  EXPECT_FALSE(fs::exists(root_ + "/copies"));  // empty directories go too
  EXPECT_EQ(store_->delete_object(del).code(), absl::StatusCode::kNotFound);
}

TEST_F(LocalStoreTest, FileInTheWayOfADirectoryIsAClearError) {
  put("a", "file");
  WriteObjectRequest req;
  req.object = "a/b";
  auto w = store_->write_object(req, "x");
  EXPECT_EQ(w.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(w.status().message()), HasSubstr("is a file"));
}

TEST_F(LocalStoreTest, AsyncReadsComplete) {
  for (int i = 0; i < 20; ++i) put("async/" + std::to_string(i), std::string(1000 + i, 'a' + i));
  std::vector<std::string> buffers(20, std::string(2000, '\0'));
  std::atomic<int> ok{0};
  std::atomic<int> done{0};
  for (int i = 0; i < 20; ++i) {
    ReadObjectRequest req;
    req.object = "async/" + std::to_string(i);
    store_->read_object_async(req, buffers[i].data(), buffers[i].size(),
                              [&, i](absl::StatusOr<ReadObjectResult> r) {
                                if (r.ok() && r->bytes == static_cast<std::size_t>(1000 + i)) ++ok;
                                ++done;
                              });
  }
  for (int spin = 0; spin < 1000 && done.load() < 20; ++spin) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(ok.load(), 20);
}

}  // namespace
}  // namespace dataflux
