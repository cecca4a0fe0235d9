#include "dataflux/url.h"

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/percent.h"

namespace dataflux {
namespace {

using ::testing::HasSubstr;

TEST(StorageUrl, ParsesGcsUrls) {
  auto url = StorageUrl::parse("gs://my-bucket/train/0001.jpg");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->scheme, Scheme::kGcs);
  EXPECT_EQ(url->bucket, "my-bucket");
  EXPECT_EQ(url->object, "train/0001.jpg");
  EXPECT_EQ(url->to_string(), "gs://my-bucket/train/0001.jpg");

  auto prefix = StorageUrl::parse("gcs://my_bucket.example/train/");
  ASSERT_TRUE(prefix.ok()) << prefix.status();
  EXPECT_EQ(prefix->bucket, "my_bucket.example");
  EXPECT_EQ(prefix->object, "train/");

  auto whole = StorageUrl::parse("gs://bucket");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->object, "");
}

TEST(StorageUrl, ParsesS3AndFile) {
  auto s3 = StorageUrl::parse("s3://data-bucket/a b/c+d%e");
  ASSERT_TRUE(s3.ok()) << s3.status();
  EXPECT_EQ(s3->scheme, Scheme::kS3);
  EXPECT_EQ(s3->object, "a b/c+d%e");

  auto file = StorageUrl::parse("file:///data/train/");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->scheme, Scheme::kFile);
  EXPECT_EQ(file->bucket, "/");
  EXPECT_EQ(file->object, "data/train/");
  EXPECT_EQ(file->to_string(), "file:///data/train/");

  auto abs = StorageUrl::parse("/tmp/x");
  ASSERT_TRUE(abs.ok());
  EXPECT_EQ(abs->object, "tmp/x");
}

TEST(StorageUrl, RelativePathsResolveAgainstTheWorkingDirectory) {
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  auto rel = StorageUrl::parse("data/x.bin");
  ASSERT_TRUE(rel.ok());
  std::string expected = std::string(cwd).substr(1);
  if (!expected.empty()) expected += "/";
  EXPECT_EQ(rel->object, expected + "data/x.bin");
}

TEST(StorageUrl, RejectsMalformedUrlsWithPreciseErrors) {
  struct Case {
    const char* url;
    const char* message;
  };
  for (const Case& c : {
           Case{"gs://", "missing bucket name"},
           Case{"gs:///object", "missing bucket name"},
           Case{"gs://Bucket/x", "must be lowercase"},
           Case{"gs://ab/x", "at least 3 characters"},
           Case{"gs://bad$name/x", "character '$' is not allowed"},
           Case{"gs://-bucket/x", "start and end with a letter or digit"},
           Case{"s3://has_underscore/x", "must not contain '_'"},
           Case{"ftp://host/x", "unknown scheme 'ftp://'"},
           Case{"file://relative/path", "absolute path"},
           Case{"gs://bucket/a\nb", "NUL, CR or LF"},
           Case{"gs://bucket/\xff\xfe", "not valid UTF-8"},
           Case{"gs://bucket/..", "'.' and '..'"},
       }) {
    auto url = StorageUrl::parse(c.url);
    ASSERT_FALSE(url.ok()) << c.url;
    EXPECT_EQ(url.status().code(), absl::StatusCode::kInvalidArgument) << c.url;
    EXPECT_THAT(std::string(url.status().message()), HasSubstr(c.message)) << c.url;
    EXPECT_THAT(std::string(url.status().message()), HasSubstr("invalid storage URL")) << c.url;
  }
  auto long_name = StorageUrl::parse("gs://bucket/" + std::string(1025, 'a'));
  EXPECT_THAT(std::string(long_name.status().message()), HasSubstr("longer than 1024 bytes"));
}

// A mistyped scheme must not turn into a relative local path: a checkpoint saved to
// ./gs:/ckpt/x.pt is a lost checkpoint.
TEST(StorageUrl, AMistypedSchemeIsAnErrorNamingTheLikelyUrl) {
  struct Case {
    const char* url;
    const char* suggestion;
  };
  for (const Case& c : {
           Case{"gs:/bucket/x", "did you mean 'gs://bucket/x'"},
           Case{"gs:bucket/x", "did you mean 'gs://bucket/x'"},
           Case{"s3:/b/key", "did you mean 's3://b/key'"},
           Case{"S3:b", "did you mean 's3://b'"},
           Case{"gcs:/bucket", "did you mean 'gcs://bucket'"},
           Case{"file:/data/x", "did you mean 'file:///data/x'"},
           Case{"gs:", "did you mean 'gs://'"},
           Case{"http:/host/x", "'http:' is not a scheme this library reads"},
           Case{"c:/data/x", "'c:' is not a scheme this library reads"},
       }) {
    auto url = StorageUrl::parse(c.url);
    ASSERT_FALSE(url.ok()) << c.url << " parsed as " << url->to_string();
    EXPECT_EQ(url.status().code(), absl::StatusCode::kInvalidArgument) << c.url;
    EXPECT_THAT(std::string(url.status().message()), HasSubstr(c.suggestion)) << c.url;
    EXPECT_THAT(std::string(url.status().message()), HasSubstr("./")) << c.url;  // the way out
  }
  // Colons later in a path, or after "./", are a path the user clearly meant.
  for (const char* path : {"./gs:/x", "data/gs:/x", "/abs/s3:b", "run-12:30/x"}) {
    auto url = StorageUrl::parse(path);
    EXPECT_TRUE(url.ok()) << path << ": " << url.status();
    if (url.ok()) EXPECT_EQ(url->scheme, Scheme::kFile);
  }
}

TEST(DisplayUrl, OneFormatterForEveryStoreWithControlBytesEscaped) {
  EXPECT_EQ(internal::display_url("gs", "b", "a/b c"), "gs://b/a/b c");
  EXPECT_EQ(internal::display_url("gs", "b", ""), "gs://b");
  EXPECT_EQ(internal::display_url("s3", "b", "k\x01\x7f\xc3\xa9"), "s3://b/k\\x01\\x7f\xc3\xa9");
  EXPECT_EQ(internal::display_url("file", "/data/", "x"), "file:///data/x");
  EXPECT_EQ(internal::display_url("file", "/", "x"), "file:///x");
  EXPECT_EQ(internal::display_url("file", "/", ""), "file:///");
}

TEST(StorageUrl, AcceptsUnicodeObjectNames) {
  auto url = StorageUrl::parse("gs://bucket/d\xc3\xa9j\xc3\xa0/\xf0\x9f\x98\x80.txt");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->object, "d\xc3\xa9j\xc3\xa0/\xf0\x9f\x98\x80.txt");
}

}  // namespace
}  // namespace dataflux
