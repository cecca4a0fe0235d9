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

TEST_P(PackTest, ObjectsSharingAStemAreOneSampleAndHiddenPathsAreLeftOut) {
  put(root_ + "g/cat/1.jpg", "J1");
  put(root_ + "g/cat/1.json", "{}");
  put(root_ + "g/cat/2.jpg", "J2");
  put(root_ + "g/.ipynb_checkpoints/x.jpg", "junk");
  put(root_ + "g/dog/.cache/y.jpg", "junk");
  auto o = options();
  o.shuffle = false;
  auto packed = pack_objects(root_ + "g", root_ + "g-out/s", o);
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ(packed->samples, 2u);
  EXPECT_THAT(packed->classes, ElementsAre("cat"));
  const std::string bytes = read(packed->shards.at(0).url);
  internal::TarSampleReader reader(bytes.data(), bytes.size(), "s", heap);
  auto first = reader.next();
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status();
  EXPECT_EQ((*first)->key, "cat/1");
  ASSERT_EQ((*first)->fields.size(), 3u);  // jpg, json, cls
  EXPECT_NE((*first)->field("json"), nullptr);
  // Two objects that would be the same field of one sample are refused, both named.
  put(root_ + "c/cat/a.JPG", "x");
  put(root_ + "c/cat/a.jpg", "y");
  auto clash = pack_objects(root_ + "c", root_ + "c-out/s", options());
  EXPECT_EQ(clash.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(clash.status().message()), HasSubstr("cat/a.JPG"));
  EXPECT_THAT(std::string(clash.status().message()), HasSubstr("cat/a.jpg"));
}

TEST_P(PackTest, RefusesAPrefixThatHoldsShardsOrLiesInsideTheSource) {
  put(root_ + "src2/cat/1.jpg", "J");
  ASSERT_TRUE(pack_objects(root_ + "src2", root_ + "out2/s", options()).ok());
  auto again = pack_objects(root_ + "src2", root_ + "out2/s", options());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("out2/s-000000.tar exists"));
  auto inside = pack_objects(root_ + "src2/", root_ + "src2/shards/s", options());
  EXPECT_EQ(inside.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(inside.status().message()), HasSubstr("inside the source"));
}

INSTANTIATE_TEST_SUITE_P(Backends, PackTest, ::testing::Values("local", "gcs", "s3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace dataflux::testing

namespace dataflux::testing {
namespace {

// A pack that fails half way deletes the shards it had published: all or nothing.
TEST(PackFailure, AFailureHalfWayLeavesNoShards) {
  emulator::EmulatorOptions eo;
  auto emu = emulator::Emulator::start(eo);
  ASSERT_TRUE(emu.ok()) << emu.status();
  ASSERT_TRUE((*emu)->create_bucket("pack-failure").ok());
  GcsOptions go;
  go.endpoint = (*emu)->endpoint();
  go.anonymous = true;
  go.retry.max_attempts = 2;
  go.retry.initial_backoff = std::chrono::milliseconds(1);
  auto store = make_gcs_store(go);
  ASSERT_TRUE(store.ok()) << store.status();
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        (*emu)->put_object("pack-failure", "src/cat/" + std::to_string(i) + ".jpg", "JPEG").ok());
  }
  // Once the first shard is stored, every read is refused.
  emulator::Emulator* e = emu->get();
  e->after_next("objects.insert", [e] {
    for (int i = 0; i < 20; ++i) e->inject_fault("objects.media", emulator::Fault::status(403));
  });
  PackOptions o;
  o.source_store = *store;
  o.writer.store = *store;
  o.writer.max_count = 1;
  o.writer.write_index = false;
  o.read_ahead_objects = 1;
  o.shuffle = false;
  auto packed = pack_objects("gs://pack-failure/src", "gs://pack-failure/out/s", o);
  ASSERT_FALSE(packed.ok());
  EXPECT_THAT(std::string(packed.status().message()), HasSubstr("403"));
  EXPECT_THAT(std::string(packed.status().message()),
              HasSubstr("shards written before were deleted"));
  for (const auto& object : (*emu)->list_objects("pack-failure")) {
    EXPECT_EQ(object.name.rfind("out/", 0), std::string::npos) << object.name;
  }
}

}  // namespace
}  // namespace dataflux::testing
