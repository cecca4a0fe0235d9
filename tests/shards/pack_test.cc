// pack_objects: an ImageFolder-style tree of objects into shards, on every backend.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "dataflux/shards.h"
#include "shards/shards_test_env.h"
#include "shards/tar_io.h"

namespace dataflux::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class PackTest : public ShardBackendTest {
 protected:
  PackOptions options() const {
    PackOptions o;
    o.source_store = store();
    o.writer.store = store();
    return o;
  }
};

FetchBuffer heap(std::uint64_t size) {
  auto bytes = std::shared_ptr<char[]>(new char[size + 1]);
  return FetchBuffer{bytes.get(), bytes};
}

TEST_P(PackTest, PacksAnImageFolderWithLabelsFromFoldersInAMixedOrder) {
  std::map<std::string, std::string> files;
  for (const char* cls : {"dog", "cat", "bird"}) {
    for (int i = 0; i < 10; ++i) {
      const std::string name = std::string(cls) + "/img." + std::to_string(i) + ".JPG";
      files[name] = std::string(cls) + std::to_string(i) + std::string(100 * i, 'x');
      put(root_ + "src/" + name, files[name]);
    }
  }
  put(root_ + "src/cat/.DS_Store", "junk");
  auto o = options();
  o.writer.max_count = 7;
  std::uint64_t last_done = 0, total = 0;
  o.progress = [&](std::uint64_t done, std::uint64_t all, std::uint64_t) {
    EXPECT_EQ(done, last_done + 1);
    last_done = done;
    total = all;
  };
  auto packed = pack_objects(root_ + "src", root_ + "dst/train", o);
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ(packed->samples, 30u);
  EXPECT_EQ(total, 30u);
  EXPECT_THAT(packed->classes, ElementsAre("bird", "cat", "dog"));  // sorted, as ImageFolder
  ASSERT_EQ(packed->shards.size(), 5u);                             // 7+7+7+7+2
  std::set<std::string> seen;
  std::vector<std::string> first_shard_labels;
  for (const auto& shard : packed->shards) {
    const std::string bytes = read(shard.url);
    internal::TarSampleReader reader(bytes.data(), bytes.size(), shard.url, heap);
    while (true) {
      auto next = reader.next();
      ASSERT_TRUE(next.ok()) << next.status();
      if (!next->has_value()) break;
      const internal::TarSample& s = **next;
      // "cat/img.3.JPG" -> key "cat/img_3", fields "jpg" and "cls".
      ASSERT_EQ(s.fields.size(), 2u) << s.key;
      const auto* jpg = s.field("jpg");
      const auto* cls = s.field("cls");
      ASSERT_NE(jpg, nullptr) << s.key;
      ASSERT_NE(cls, nullptr) << s.key;
      const std::string folder = s.key.substr(0, s.key.find('/'));
      const std::string index = s.key.substr(s.key.find('_') + 1);
      EXPECT_EQ(std::string(jpg->buffer.data, jpg->size),
                files.at(folder + "/img." + index + ".JPG"));
      const std::string label(cls->buffer.data, cls->size);
      EXPECT_EQ(label, folder == "bird" ? "0" : folder == "cat" ? "1" : "2") << s.key;
      if (&shard == &packed->shards.front()) first_shard_labels.push_back(label);
      EXPECT_TRUE(seen.insert(s.key).second) << s.key;
    }
  }
  EXPECT_EQ(seen.size(), 30u);
  // Shuffled by default: the first shard is not one class.
  EXPECT_GT(std::set<std::string>(first_shard_labels.begin(), first_shard_labels.end()).size(), 1u);
}

TEST_P(PackTest, AnObjectOutsideAClassFolderIsAnErrorNamingIt) {
  put(root_ + "flat/a.jpg", "A");
  auto packed = pack_objects(root_ + "flat/", root_ + "out/s", options());
  EXPECT_EQ(packed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(packed.status().message()), HasSubstr("flat/a.jpg"));
  auto o = options();
  o.labels_from_folders = false;
  o.shuffle = false;
  auto unlabeled = pack_objects(root_ + "flat/", root_ + "out/s", o);
  ASSERT_TRUE(unlabeled.ok()) << unlabeled.status();
  EXPECT_EQ(unlabeled->samples, 1u);
}

TEST_P(PackTest, NothingToPackIsNotFound) {
  auto packed = pack_objects(root_ + "empty/", root_ + "out/s", options());
  EXPECT_EQ(packed.status().code(), absl::StatusCode::kNotFound) << packed.status();
}

INSTANTIATE_TEST_SUITE_P(Backends, PackTest, ::testing::Values("local", "gcs", "s3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace dataflux::testing
