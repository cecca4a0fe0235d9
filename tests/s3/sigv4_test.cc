// The worked examples from AWS's "Signature Calculations for the Authorization Header:
// Transferring Payload in a Single Chunk" (public documentation test vectors; the key pair is
// AWS's documented example, not a secret).
#include "core/sigv4.h"
#include "core/percent.h"

#include <gtest/gtest.h>

namespace dataflux::internal {
namespace {

constexpr char kSecret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr char kDate[] = "20130524T000000Z";
constexpr char kEmptySha[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr char kHost[] = "examplebucket.s3.amazonaws.com";

struct Signed {
  std::string canonical;
  std::string signed_headers;
  std::string to_sign;
  std::string signature;
};

Signed sign(const SigV4Request& r) {
  Signed s;
  s.canonical = canonical_request(r, &s.signed_headers);
  s.to_sign = string_to_sign(kDate, credential_scope("20130524", "us-east-1", "s3"), s.canonical);
  s.signature = sigv4_signature(kSecret, "20130524", "us-east-1", "s3", s.to_sign);
  return s;
}

TEST(SigV4, AwsExampleGetObjectWithRange) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/test.txt";
  r.headers = {{"Host", kHost},
               {"Range", "bytes=0-9"},
               {"x-amz-content-sha256", kEmptySha},
               {"x-amz-date", kDate}};
  r.payload_hash = kEmptySha;
  Signed s = sign(r);
  EXPECT_EQ(s.canonical, std::string("GET\n/test.txt\n\nhost:") + kHost +
                             "\nrange:bytes=0-9\nx-amz-content-sha256:" + kEmptySha +
                             "\nx-amz-date:20130524T000000Z\n\n"
                             "host;range;x-amz-content-sha256;x-amz-date\n" +
                             kEmptySha);
  EXPECT_EQ(s.to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(s.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, AwsExamplePutObject) {
  const std::string payload = "Welcome to Amazon S3.";
  const std::string hash = sha256_hex(payload);
  EXPECT_EQ(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  SigV4Request r;
  r.method = "PUT";
  r.canonical_uri = "/" + percent_encode("test$file.text", true);
  EXPECT_EQ(r.canonical_uri, "/test%24file.text");
  r.headers = {{"Host", kHost},
               {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
               {"x-amz-date", kDate},
               {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
               {"x-amz-content-sha256", hash}};
  r.payload_hash = hash;
  Signed s = sign(r);
  EXPECT_EQ(s.signed_headers, "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class");
  EXPECT_EQ(sha256_hex(s.canonical),
            "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d");
  EXPECT_EQ(s.signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST(SigV4, AwsExampleListObjectsWithQueryParameters) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/";
  r.query = {{"prefix", "J"}, {"max-keys", "2"}};  // sorted by the signer
  r.headers = {{"Host", kHost}, {"x-amz-content-sha256", kEmptySha}, {"x-amz-date", kDate}};
  r.payload_hash = kEmptySha;
  Signed s = sign(r);
  EXPECT_NE(s.canonical.find("\n/\nmax-keys=2&prefix=J\n"), std::string::npos) << s.canonical;
  EXPECT_EQ(sha256_hex(s.canonical),
            "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7");
  EXPECT_EQ(s.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4, AwsExampleBucketLifecycleHasAnEmptyQueryValue) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/";
  r.query = {{"lifecycle", ""}};
  r.headers = {{"Host", kHost}, {"x-amz-content-sha256", kEmptySha}, {"x-amz-date", kDate}};
  r.payload_hash = kEmptySha;
  Signed s = sign(r);
  EXPECT_NE(s.canonical.find("\n/\nlifecycle=\n"), std::string::npos);
  EXPECT_EQ(s.signature, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST(SigV4, UriEncodeKeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(percent_encode("a b/c~d-e_f.g+h=é", true), "a%20b/c~d-e_f.g%2Bh%3D%C3%A9");
  EXPECT_EQ(percent_encode("a/b", false), "a%2Fb");
  EXPECT_EQ(canonical_query_string({{"b", "x y"}, {"a", "2"}, {"a", "1"}}), "a=1&a=2&b=x%20y");
}

TEST(SigV4, HeaderValuesAreTrimmedAndRepeatedNamesJoined) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/";
  r.headers = {{"Host", "h"}, {"X-Amz-Meta-A", "  one   two "}, {"x-amz-meta-a", "three"}};
  r.payload_hash = kUnsignedPayload;
  std::string signed_headers;
  std::string canonical = canonical_request(r, &signed_headers);
  EXPECT_NE(canonical.find("x-amz-meta-a:one two,three\n"), std::string::npos) << canonical;
  EXPECT_EQ(signed_headers, "host;x-amz-meta-a");
}

TEST(SigV4, ParsesAuthorizationHeaders) {
  auto a = parse_sigv4_authorization(
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
      "SignedHeaders=host;range;x-amz-date, Signature=abc123");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->access_key_id, "AKIAIOSFODNN7EXAMPLE");
  EXPECT_EQ(a->date, "20130524");
  EXPECT_EQ(a->region, "us-east-1");
  EXPECT_EQ(a->service, "s3");
  EXPECT_EQ(a->signed_headers, (std::vector<std::string>{"host", "range", "x-amz-date"}));
  EXPECT_EQ(a->signature, "abc123");
  EXPECT_FALSE(parse_sigv4_authorization("Bearer token").has_value());
  EXPECT_FALSE(parse_sigv4_authorization("AWS4-HMAC-SHA256 Credential=a/b, Signature=x"));
  EXPECT_FALSE(parse_sigv4_authorization("AWS4-HMAC-SHA256 SignedHeaders=host").has_value());
}

TEST(SigV4, ConstantTimeEqual) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "ab"));
}

}  // namespace
}  // namespace dataflux::internal
