#include "emulator/wire.h"

#include <gtest/gtest.h>
#include <zlib.h>

namespace dataflux::emulator::internal {
namespace {

TEST(WireTest, PercentDecodeAndSplitPath) {
  EXPECT_EQ(percent_decode("a%20b%2Bc%25d+e").value(), "a b+c%d+e");
  EXPECT_FALSE(percent_decode("bad%2").has_value());
  EXPECT_FALSE(percent_decode("bad%zz").has_value());
  auto segments = split_path("/storage/v1/b/bkt/o/dir%2Fa%3Fb?alt=media");
  ASSERT_TRUE(segments.has_value());
  EXPECT_EQ(*segments, (std::vector<std::string>{"storage", "v1", "b", "bkt", "o", "dir/a?b"}));
  EXPECT_EQ(percent_encode("a b/ü"), "a%20b%2F%C3%BC");
}

TEST(WireTest, ParseRange) {
  ByteRange r;
  EXPECT_EQ(parse_range("", 10, &r), RangeResult::kNone);
  ASSERT_EQ(parse_range("bytes=2-5", 10, &r), RangeResult::kOk);
  EXPECT_EQ(r.first, 2u);
  EXPECT_EQ(r.last, 5u);
  ASSERT_EQ(parse_range("bytes=7-", 10, &r), RangeResult::kOk);
  EXPECT_EQ(r.last, 9u);
  ASSERT_EQ(parse_range("bytes=-3", 10, &r), RangeResult::kOk);
  EXPECT_EQ(r.first, 7u);
  ASSERT_EQ(parse_range("bytes=5-100", 10, &r), RangeResult::kOk);  // clamped, as HTTP says
  EXPECT_EQ(r.last, 9u);
  EXPECT_EQ(parse_range("bytes=10-", 10, &r), RangeResult::kUnsatisfiable);
  EXPECT_EQ(parse_range("bytes=-0", 10, &r), RangeResult::kUnsatisfiable);
  EXPECT_EQ(parse_range("bytes=5-2", 10, &r), RangeResult::kMalformed);
  EXPECT_EQ(parse_range("bytes=a-b", 10, &r), RangeResult::kMalformed);
  EXPECT_EQ(parse_range("items=1-2", 10, &r), RangeResult::kMalformed);
}

TEST(WireTest, ParseContentRange) {
  auto a = parse_content_range("bytes 0-262143/*");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a->first, 0u);
  EXPECT_EQ(*a->last, 262143u);
  EXPECT_FALSE(a->total.has_value());
  auto b = parse_content_range("bytes */100");
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->first.has_value());
  EXPECT_EQ(*b->total, 100u);
  auto c = parse_content_range("bytes */*");
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->total.has_value());
  EXPECT_FALSE(parse_content_range("bytes 5-1/10").has_value());
  EXPECT_FALSE(parse_content_range("bytes 1-2").has_value());
  EXPECT_FALSE(parse_content_range("garbage").has_value());
}

TEST(WireTest, ParseMultipart) {
  EXPECT_EQ(multipart_boundary("multipart/related; boundary=abc").value(), "abc");
  EXPECT_EQ(multipart_boundary("multipart/related; boundary=\"a b\"").value(), "a b");
  EXPECT_EQ(multipart_boundary("multipart/related; boundary='==x=='").value(), "==x==");
  EXPECT_FALSE(multipart_boundary("multipart/related").has_value());
  const std::string body =
      "--XX\r\nContent-Type: application/json\r\n\r\n{\"name\":\"o\"}\r\n"
      "--XX\r\nContent-Type: text/plain\r\n\r\nline1\r\n--XXnot\r\n--XX--\r\n";
  auto parts = parse_multipart(body, "XX");
  ASSERT_TRUE(parts.has_value());
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].content_type, "application/json");
  EXPECT_EQ((*parts)[0].body, "{\"name\":\"o\"}");
  EXPECT_EQ((*parts)[1].content_type, "text/plain");
  EXPECT_EQ((*parts)[1].body, "line1\r\n--XXnot");  // a delimiter must be a whole line
  EXPECT_FALSE(parse_multipart(body.substr(0, body.size() - 30), "XX").has_value());
  EXPECT_FALSE(parse_multipart("no delimiter", "XX").has_value());
}

TEST(WireTest, AcceptsGzip) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(accepts_gzip("gzip, deflate"));  // what curl and Python clients send
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("x-gzip-ish"));
}

TEST(WireTest, GunzipOneAndSeveralMembers) {
  auto gz = [](const std::string& data) {
    z_stream z{};
    deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    std::string out(deflateBound(&z, data.size()) + 64, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
  };
  std::string big(300000, 'q');
  for (std::size_t i = 0; i < big.size(); i += 7) big[i] = static_cast<char>('a' + i % 26);
  EXPECT_EQ(gunzip(gz(big)), big);
  EXPECT_EQ(gunzip(gz("one ") + gz("two")), "one two");  // concatenated members, as gzip allows
  EXPECT_EQ(gunzip(gz("")), "");
  std::string truncated = gz(big);
  truncated.resize(truncated.size() / 2);
  EXPECT_FALSE(gunzip(truncated).has_value());
  EXPECT_FALSE(gunzip("not gzip at all").has_value());
}

TEST(WireTest, GoogHashAndNumbers) {
  GoogHash h = parse_goog_hash("crc32c=yZRlqg==, md5=XrY7u+Ae7tCTyyK7j1rNww==");
  EXPECT_EQ(h.crc32c, "yZRlqg==");
  EXPECT_EQ(h.md5, "XrY7u+Ae7tCTyyK7j1rNww==");
  EXPECT_EQ(parse_u64("18446744073709551615").value(), 18446744073709551615ull);
  EXPECT_FALSE(parse_u64("18446744073709551616").has_value());
  EXPECT_FALSE(parse_u64("-1").has_value());
  EXPECT_EQ(parse_i64("-5").value(), -5);
  EXPECT_EQ(md5_base64("hello world"), "XrY7u+Ae7tCTyyK7j1rNww==");
  EXPECT_EQ(rfc3339(1700000000123456), "2023-11-14T22:13:20.123Z");
}

}  // namespace
}  // namespace dataflux::emulator::internal
