// GCS `fields=` selectors: parsing, nesting, paths, unions, and refusal of malformed ones.
#include "emulator/fields.h"

#include <gtest/gtest.h>

namespace dataflux::emulator::internal {
namespace {

TEST(FieldMaskTest, EmptyKeepsEverything) {
  auto m = FieldMask::parse("");
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->keeps("selfLink"));
  EXPECT_TRUE(m->inside("items").keeps("anything"));
}

TEST(FieldMaskTest, NestedSelectionsAndPaths) {
  auto m = FieldMask::parse("nextPageToken, items(name,size),prefixes");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->keeps("nextPageToken"));
  EXPECT_TRUE(m->keeps("prefixes"));
  EXPECT_TRUE(m->keeps("items"));
  EXPECT_FALSE(m->keeps("kind"));
  EXPECT_TRUE(m->inside("items").keeps("name"));
  EXPECT_TRUE(m->inside("items").keeps("size"));
  EXPECT_FALSE(m->inside("items").keeps("selfLink"));

  auto p = FieldMask::parse("items/name,items/metadata/color");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->inside("items").keeps("name"));
  EXPECT_TRUE(p->inside("items").keeps("metadata"));
  EXPECT_TRUE(p->inside("items").inside("metadata").keeps("color"));
  EXPECT_FALSE(p->inside("items").inside("metadata").keeps("shape"));
  EXPECT_FALSE(p->inside("items").keeps("size"));
}

TEST(FieldMaskTest, MetadataKeysMayHoldDashesAndDots) {
  // gcloud storage rsync selects its POSIX metadata keys by name.
  auto m = FieldMask::parse(
      "prefixes,items/name,items/metadata/goog-reserved-file-atime,items/metadata/a.b,"
      "items/kmsKeyName");
  ASSERT_TRUE(m.ok()) << m.status();
  const FieldMask& metadata = m->inside("items").inside("metadata");
  EXPECT_TRUE(metadata.keeps("goog-reserved-file-atime"));
  EXPECT_TRUE(metadata.keeps("a.b"));
  EXPECT_FALSE(metadata.keeps("goog-reserved-posix-uid"));
  EXPECT_TRUE(m->inside("items").keeps("kmsKeyName"));
}

TEST(FieldMaskTest, ANamedMemberIsWholeEvenWhenAlsoSelectedInPart) {
  for (const char* spec : {"items,items(name)", "items(name),items"}) {
    auto m = FieldMask::parse(spec);
    ASSERT_TRUE(m.ok()) << spec;
    EXPECT_TRUE(m->inside("items").keeps("selfLink")) << spec;
  }
}

TEST(FieldMaskTest, MalformedSelectorsAreRefusedByName) {
  for (const char* spec : {"items(", "items(name", "items)", ",", "a,,b", "items()", "a/", "(a)",
                           "a b", "items(name))"}) {
    auto m = FieldMask::parse(spec);
    ASSERT_FALSE(m.ok()) << spec;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(m.status().message()).find(spec), std::string::npos) << m.status();
  }
}

}  // namespace
}  // namespace dataflux::emulator::internal
