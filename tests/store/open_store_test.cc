#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "dataflux/open_store.h"

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

}  // namespace
}  // namespace dataflux
