#include "gcs/gcs_paths.h"

#include <gtest/gtest.h>

#include <string>

#include "gcs/gcs_client.h"

namespace dataflux::internal {
namespace {

TEST(PercentEncode, KeepsUnreservedCharacters) {
  const std::string unreserved =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
  EXPECT_EQ(percent_encode(unreserved), unreserved);
}

TEST(PercentEncode, EncodesEverythingElse) {
  EXPECT_EQ(percent_encode("a/b"), "a%2Fb");
  EXPECT_EQ(percent_encode("a b"), "a%20b");
  EXPECT_EQ(percent_encode("a+b"), "a%2Bb");
  EXPECT_EQ(percent_encode("100%"), "100%25");
  EXPECT_EQ(percent_encode("x#y?z=1&w"), "x%23y%3Fz%3D1%26w");
  EXPECT_EQ(percent_encode("(a,b)"), "%28a%2Cb%29");
  EXPECT_EQ(percent_encode("\xc3\xa9t\xc3\xa9"), "%C3%A9t%C3%A9");  // "été" in UTF-8
  EXPECT_EQ(percent_encode(std::string("\x00\xff", 2)), "%00%FF");
  EXPECT_EQ(percent_encode(""), "");
}

TEST(PercentEncode, EveryByteRoundTrips) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  std::string encoded = percent_encode(all);
  // Decode by hand: the encoding must be unambiguous and lossless.
  std::string decoded;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] == '%') {
      decoded.push_back(static_cast<char>(std::stoi(encoded.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      decoded.push_back(encoded[i]);
    }
  }
  EXPECT_EQ(decoded, all);
  EXPECT_EQ(encoded.find_first_of("/?#& +"), std::string::npos);
}

TEST(QueryString, BuildsEncodedQuery) {
  QueryString q;
  EXPECT_EQ(q.str(), "");
  q.add("prefix", "a b/");
  q.add_nonempty("delimiter", "");
  q.add("maxResults", std::int64_t{1000});
  q.add("ifGenerationMatch", std::int64_t{0});
  EXPECT_EQ(q.str(), "?prefix=a%20b%2F&maxResults=1000&ifGenerationMatch=0");
}

TEST(ObjectPath, EncodesBucketAndObject) {
  EXPECT_EQ(object_path("b", "dir/x y"), "/storage/v1/b/b/o/dir%2Fx%20y");
  EXPECT_EQ(object_path("b", ""), "/storage/v1/b/b/o");
  EXPECT_EQ(gs_url("b", "dir/o"), "gs://b/dir/o");
}

TEST(ResolveEndpoint, ExplicitOptionWinsAndIsNeverTakenForAnEmulator) {
  auto e = resolve_endpoint("http://127.0.0.1:1234/", "localhost:9");
  EXPECT_EQ(e.url, "http://127.0.0.1:1234");
  EXPECT_FALSE(e.emulator);  // credentials unless GcsOptions::anonymous
  e = resolve_endpoint("https://storage-psc.p.googleapis.com", nullptr);
  EXPECT_FALSE(e.emulator);
  e = resolve_endpoint("https://storage.googleapis.com", nullptr);
  EXPECT_FALSE(e.emulator);
}

TEST(ResolveEndpoint, EmulatorHostGetsScheme) {
  auto e = resolve_endpoint("", "localhost:9023");
  EXPECT_EQ(e.url, "http://localhost:9023");
  EXPECT_TRUE(e.emulator);
  e = resolve_endpoint("", "https://gcs.example:443");
  EXPECT_EQ(e.url, "https://gcs.example:443");
}

TEST(ResolveEndpoint, DefaultsToGoogle) {
  for (const char* env : {static_cast<const char*>(nullptr), ""}) {
    auto e = resolve_endpoint("", env);
    EXPECT_EQ(e.url, "https://storage.googleapis.com");
    EXPECT_FALSE(e.emulator);
  }
}

TEST(SameTransportOptions, DetectsAnyDifference) {
  TransportOptions a, b;
  EXPECT_TRUE(same_transport_options(a, b));
  b.stall_timeout = std::chrono::milliseconds(5);
  EXPECT_FALSE(same_transport_options(a, b));
  b = a;
  b.threads = 3;
  EXPECT_FALSE(same_transport_options(a, b));
}

}  // namespace
}  // namespace dataflux::internal
