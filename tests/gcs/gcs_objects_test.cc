// Listing, metadata, writes, compose, copy, delete and buckets against the emulator.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <vector>

#include "dataflux/crc32c.h"
#include "gcs_test_env.h"

namespace dataflux::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class GcsObjectsTest : public GcsEmulatorTest {
 protected:
  ObjectMetadata write(const std::string& name, const std::string& data,
                       std::optional<std::int64_t> if_generation_match = std::nullopt) {
    WriteObjectRequest request = write_request(bucket_, name);
    request.if_generation_match = if_generation_match;
    auto meta = store_->write_object(request, data);
    EXPECT_TRUE(meta.ok()) << meta.status();
    return meta.ok() ? *meta : ObjectMetadata{};
  }

  std::vector<std::string> list_all(ListObjectsRequest request, int* pages = nullptr) {
    std::vector<std::string> names;
    int n = 0;
    do {
      auto page = store_->list_objects(request);
      EXPECT_TRUE(page.ok()) << page.status();
      if (!page.ok()) break;
      ++n;
      for (const auto& o : page->objects) names.push_back(o.name);
      request.page_token = page->next_page_token;
    } while (!request.page_token.empty() && n < 100);
    if (pages != nullptr) *pages = n;
    return names;
  }
};

TEST_F(GcsObjectsTest, Capabilities) {
  auto caps = store_->capabilities();
  EXPECT_TRUE(caps.compose);
  EXPECT_EQ(caps.max_compose_sources, 32);
  EXPECT_TRUE(caps.resumable_writes);
  EXPECT_TRUE(caps.server_end_offset);
  EXPECT_TRUE(caps.generations);
  EXPECT_EQ(caps.write_chunk_quantum, 256u << 10);
  EXPECT_EQ(store_->backend(), "gcs");
  EXPECT_EQ(store_->endpoint(), emu_->endpoint());
}

TEST_F(GcsObjectsTest, EndpointFromEnvironment) {
  setenv("STORAGE_EMULATOR_HOST", emu_->endpoint().substr(7).c_str(), 1);  // no scheme
  auto store = make_gcs_store({});
  unsetenv("STORAGE_EMULATOR_HOST");
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->endpoint(), emu_->endpoint());
  seed_object("x", "abc");
  auto meta = (*store)->get_object_metadata(bucket_, "x");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->size, 3u);
}

TEST_F(GcsObjectsTest, WriteThenMetadata) {
  std::string data = random_bytes(123457, 7);
  WriteObjectRequest request = write_request(bucket_, "dir/file.bin");
  request.content_type = "application/x-test";
  auto written = store_->write_object(request, data);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->size, data.size());
  EXPECT_EQ(written->crc32c, crc32c(data));
  EXPECT_GT(written->generation, 0);
  EXPECT_EQ(stored("dir/file.bin"), data);

  auto meta = store_->get_object_metadata(bucket_, "dir/file.bin");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->bucket, bucket_);
  EXPECT_EQ(meta->name, "dir/file.bin");
  EXPECT_EQ(meta->size, data.size());
  EXPECT_EQ(meta->generation, written->generation);
  EXPECT_EQ(meta->metageneration, 1);
  EXPECT_EQ(meta->crc32c, crc32c(data));
  EXPECT_FALSE(meta->md5_hash.empty());
  EXPECT_EQ(meta->content_type, "application/x-test");
  EXPECT_GT(meta->updated.time_since_epoch().count(), 0);
}

TEST_F(GcsObjectsTest, WriteWithWrongCallerCrcFails) {
  WriteObjectRequest request = write_request(bucket_, "obj");
  request.crc32c = crc32c("hello") ^ 0x10;
  auto meta = store_->write_object(request, "hello");
  EXPECT_FALSE(meta.ok());
  EXPECT_THAT(meta.status().code(),
              ::testing::AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kInvalidArgument));
}

TEST_F(GcsObjectsTest, ZeroByteObjects) {
  auto meta = write("empty", "");
  EXPECT_EQ(meta.size, 0u);
  EXPECT_EQ(meta.crc32c, 0u);
  auto got = store_->get_object_metadata(bucket_, "empty");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size, 0u);
}

TEST_F(GcsObjectsTest, OddNamesSurviveEveryOperation) {
  const std::vector<std::string> names = {"with space",
                                          "plus+sign",
                                          "percent%25%",
                                          "a/b/c",
                                          "\xc3\xa9t\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac",
                                          "hash#frag",
                                          "query?x=1&y=2",
                                          "semi;colon=eq",
                                          "tilde~dot.-_",
                                          "back\\slash"};
  for (const auto& name : names) {
    write(name, "data:" + name);
    EXPECT_EQ(stored(name), "data:" + name) << name;
    auto meta = store_->get_object_metadata(bucket_, name);
    ASSERT_TRUE(meta.ok()) << name << ": " << meta.status();
    EXPECT_EQ(meta->name, name);
    std::string buf(64, '\0');
    auto read = store_->read_object(read_request(bucket_, name), buf.data(), buf.size());
    ASSERT_TRUE(read.ok()) << name << ": " << read.status();
    EXPECT_EQ(buf.substr(0, read->bytes), "data:" + name);
  }
  std::vector<std::string> listed = list_all(list_request(bucket_));
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(listed, sorted);
  // A prefix with odd characters is encoded too.
  EXPECT_THAT(list_all(list_request(bucket_, "query?")), ElementsAre("query?x=1&y=2"));
  for (const auto& name : names) {
    EXPECT_TRUE(store_->delete_object(delete_request(bucket_, name)).ok()) << name;
    EXPECT_FALSE(exists(name)) << name;
  }
}

TEST_F(GcsObjectsTest, PaginationAcrossManyPages) {
  std::vector<std::string> expected;
  for (int i = 0; i < 2500; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "shard-%05d", i);
    expected.push_back(name);
    seed_object(name, std::string(i % 7, 'x'));
  }
  ListObjectsRequest request = list_request(bucket_);
  request.max_results = 1000;
  int pages = 0;
  EXPECT_EQ(list_all(request, &pages), expected);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(emu_->request_count("objects.list"), 3u);

  auto page = store_->list_objects(request);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->objects.size(), 1000u);
  EXPECT_EQ(page->objects[6].size, 6u);
  EXPECT_GT(page->objects[6].generation, 0);
  EXPECT_TRUE(page->objects[6].crc32c.has_value());
  EXPECT_EQ(page->objects[6].bucket, bucket_);
}

TEST_F(GcsObjectsTest, PrefixDelimiterAndOffsets) {
  for (const char* name : {"a/1", "a/2", "a/sub/3", "b/4", "c", "d/5"}) seed_object(name, "x");
  ListObjectsRequest request = list_request(bucket_);
  request.delimiter = "/";
  auto page = store_->list_objects(request);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].name, "c");
  EXPECT_THAT(page->prefixes, ElementsAre("a/", "b/", "d/"));

  request.prefix = "a/";
  page = store_->list_objects(request);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_THAT(page->prefixes, ElementsAre("a/sub/"));

  ListObjectsRequest range = list_request(bucket_);
  range.start_offset = "a/2";
  range.end_offset = "c";
  EXPECT_THAT(list_all(range), ElementsAre("a/2", "a/sub/3", "b/4"));
}

TEST_F(GcsObjectsTest, LeanListingsCarryWhatADatasetNeedsAndNoMore) {
  WriteObjectRequest write = write_request(bucket_, "lean/a");
  write.content_type = "application/x-test";
  ASSERT_TRUE(store_->write_object(write, "hello").ok());
  ListObjectsRequest request = list_request(bucket_);
  request.prefix = "lean/";
  auto full = store_->list_objects(request);
  request.lean = true;
  auto lean = store_->list_objects(request);
  ASSERT_TRUE(full.ok() && lean.ok());
  ASSERT_EQ(lean->objects.size(), 1u);
  const ObjectMetadata& o = lean->objects[0];
  EXPECT_EQ(o.name, "lean/a");
  EXPECT_EQ(o.size, 5u);
  EXPECT_EQ(o.generation, full->objects[0].generation);
  EXPECT_EQ(o.crc32c, crc32c("hello"));
  EXPECT_EQ(o.storage_class, "STANDARD");
  EXPECT_EQ(o.content_type, "");  // not asked for, so the server sent none
  EXPECT_EQ(full->objects[0].content_type, "application/x-test");
}

TEST_F(GcsObjectsTest, ListMissingBucketIsNotFound) {
  auto page = store_->list_objects(list_request("no-such-bucket-xyz", "pre/"));
  EXPECT_EQ(page.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(page.status().message(), HasSubstr("LIST gs://no-such-bucket-xyz/pre/"));
}

TEST_F(GcsObjectsTest, MetadataOfMissingObject) {
  auto meta = store_->get_object_metadata(bucket_, "ghost");
  EXPECT_EQ(meta.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(meta.status().message(), HasSubstr("gs://" + bucket_ + "/ghost"));
}

TEST_F(GcsObjectsTest, GenerationPreconditions) {
  auto first = write("obj", "one", 0);  // create-only
  WriteObjectRequest again = write_request(bucket_, "obj");
  again.if_generation_match = 0;
  auto clash = store_->write_object(again, "two");
  EXPECT_EQ(clash.status().code(), absl::StatusCode::kFailedPrecondition) << clash.status();
  EXPECT_EQ(stored("obj"), "one");

  again.if_generation_match = first.generation;
  auto second = store_->write_object(again, "two");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(second->generation, first.generation);

  auto stale = store_->delete_object(delete_request(bucket_, "obj", first.generation));
  EXPECT_EQ(stale.code(), absl::StatusCode::kFailedPrecondition) << stale;
  EXPECT_TRUE(exists("obj"));
  EXPECT_TRUE(store_->delete_object(delete_request(bucket_, "obj", second->generation)).ok());
  EXPECT_FALSE(exists("obj"));
  auto gone = store_->delete_object(delete_request(bucket_, "obj"));
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound);
}

TEST_F(GcsObjectsTest, ComposeConcatenatesSources) {
  std::string all;
  ComposeObjectRequest request = compose_request(bucket_, "composed");
  for (int i = 0; i < 3; ++i) {
    std::string part = random_bytes(1000 + i, 20 + i);
    all += part;
    auto meta = write("part-" + std::to_string(i), part);
    request.sources.push_back({meta.name, meta.generation});
  }
  request.if_generation_match = 0;
  auto meta = store_->compose_object(request);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->size, all.size());
  EXPECT_EQ(meta->crc32c, crc32c(all));
  EXPECT_EQ(stored("composed"), all);

  // The destination precondition now fails, and a stale source generation does too.
  auto again = store_->compose_object(request);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  request.if_generation_match.reset();
  request.sources[0].generation = request.sources[0].generation.value() + 1000;
  auto stale = store_->compose_object(request);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition) << stale.status();
}

TEST_F(GcsObjectsTest, ComposeOfTooManySourcesIsRejectedLocally) {
  ComposeObjectRequest request = compose_request(bucket_, "composed");
  for (int i = 0; i < 33; ++i) request.sources.push_back({"p" + std::to_string(i), std::nullopt});
  auto meta = store_->compose_object(request);
  EXPECT_EQ(meta.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(emu_->request_count("objects.compose"), 0u);
  request.sources.clear();
  EXPECT_EQ(store_->compose_object(request).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(GcsObjectsTest, CopyObject) {
  std::string data = random_bytes(200000, 9);
  auto src = write("src", data);
  CopyObjectRequest request;
  request.source_bucket = bucket_;
  request.source_object = "src";
  request.source_generation = src.generation;
  request.destination_bucket = bucket_;
  request.destination_object = "dst/copy of src";
  request.if_generation_match = 0;
  auto meta = store_->copy_object(request);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->name, "dst/copy of src");
  EXPECT_EQ(meta->size, data.size());
  EXPECT_EQ(meta->crc32c, crc32c(data));
  EXPECT_EQ(stored("dst/copy of src"), data);

  auto again = store_->copy_object(request);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  request.source_object = "missing";
  request.source_generation.reset();
  EXPECT_EQ(store_->copy_object(request).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(GcsObjectsTest, BucketsCreateAndDelete) {
  const std::string bucket = bucket_ + "-new";
  ASSERT_TRUE(store_->create_bucket(bucket).ok());
  auto dup = store_->create_bucket(bucket);
  EXPECT_FALSE(dup.ok());
  WriteObjectRequest request = write_request(bucket, "o");
  ASSERT_TRUE(store_->write_object(request, "x").ok());
  EXPECT_FALSE(store_->delete_bucket(bucket).ok());  // not empty
  ASSERT_TRUE(store_->delete_object(delete_request(bucket, "o")).ok());
  EXPECT_TRUE(store_->delete_bucket(bucket).ok());
  auto gone = store_->delete_bucket(bucket);
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->create_bucket("Bad_Bucket!").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(GcsObjectsTest, InvalidNamesRejectedBeforeAnyRequest) {
  EXPECT_EQ(store_->get_object_metadata(bucket_, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->get_object_metadata(bucket_, "a\nb").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->list_objects(list_request("")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(emu_->request_count("objects.get"), 0u);
}

}  // namespace
}  // namespace dataflux::testing
