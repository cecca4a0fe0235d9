#include "dataflux/crc32c.h"

#include <cstdio>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include <vector>

#include "core/read_checks.h"

namespace dataflux {
namespace {

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// Bitwise reference: slow but obviously right.
std::uint32_t reference_crc32c(std::string_view data) {
  std::uint32_t crc = ~0u;
  for (unsigned char b : data) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1) ? 0x82f63b78u : 0);
  }
  return ~crc;
}

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c("123456789"), 0xe3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8a9136aau);  // RFC 3720 B.4
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62a8ab43u);
}

TEST(Crc32c, MatchesBitwiseReferenceOnRandomData) {
  for (std::size_t n : {1u, 7u, 8u, 9u, 63u, 64u, 65u, 4095u, 100000u, 1000003u}) {
    std::string data = random_bytes(n, n);
    EXPECT_EQ(crc32c(data), reference_crc32c(data)) << "size " << n;
  }
}

TEST(Crc32c, IncrementalEqualsWhole) {
  std::string data = random_bytes(1 << 20, 42);
  std::uint32_t whole = crc32c(data);
  for (std::size_t split : {0u, 1u, 3u, 8u, 4096u, 524287u, 1048576u}) {
    std::uint32_t crc = crc32c_extend(0, data.data(), split);
    crc = crc32c_extend(crc, data.data() + split, data.size() - split);
    EXPECT_EQ(crc, whole) << "split at " << split;
  }
}

TEST(Crc32c, CombineEqualsConcatenation) {
  std::string a = random_bytes(12345, 1);
  std::string b = random_bytes(67890, 2);
  EXPECT_EQ(crc32c_combine(crc32c(a), crc32c(b), b.size()), crc32c(a + b));
  EXPECT_EQ(crc32c_combine(crc32c(a), crc32c(""), 0), crc32c(a));
  EXPECT_EQ(crc32c_combine(crc32c(""), crc32c(b), b.size()), crc32c(b));
}

TEST(Crc32c, RangeChecksumsCombineIntoTheWholeObjects) {
  const std::string data = random_bytes(100003, 3);  // the last range is short
  for (std::uint64_t range : {1000ull, 4096ull, 100003ull, 200000ull}) {
    std::vector<std::uint32_t> crcs;
    for (std::uint64_t off = 0; off < data.size(); off += range) {
      crcs.push_back(crc32c(std::string_view(data).substr(off, range)));
    }
    EXPECT_EQ(internal::crc32c_of_ranges(crcs, range, data.size()), crc32c(data)) << range;
  }
  EXPECT_EQ(internal::crc32c_of_ranges({}, 4096, 0), crc32c(""));
}

TEST(Crc32c, Base64RoundTripMatchesGcsEncoding) {
  // GCS reports crc32c("123456789") as big-endian bytes e3 06 92 83, base64 "4waSgw==".
  EXPECT_EQ(crc32c_to_base64(0xe3069283u), "4waSgw==");
  EXPECT_EQ(crc32c_from_base64("4waSgw=="), 0xe3069283u);
  EXPECT_EQ(crc32c_from_base64("AAAAAA=="), 0u);
  EXPECT_FALSE(crc32c_from_base64("not base64!").has_value());
  EXPECT_FALSE(crc32c_from_base64("AAAAAAAA").has_value());  // 6 bytes, not 4
}

// An independent implementation (Debian's python3-crc32c) agrees on long random data.
TEST(Crc32c, AgreesWithPythonCrc32cPackage) {
  if (std::system("/usr/bin/python3 -c 'import crc32c' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3-crc32c is not installed (apt-get install python3-crc32c)";
  }
  std::string data = random_bytes(3 << 20, 7);
  char path[] = "/tmp/dataflux_crc_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE* f = fdopen(fd, "wb");
  ASSERT_EQ(fwrite(data.data(), 1, data.size(), f), data.size());
  fclose(f);
  std::string cmd =
      std::string("/usr/bin/python3 -c 'import crc32c,sys; print(crc32c.crc32c(open(") +
      "sys.argv[1],\"rb\").read()))' " + path;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  unsigned long long python_value = 0;
  ASSERT_EQ(fscanf(p, "%llu", &python_value), 1);
  pclose(p);
  std::remove(path);
  EXPECT_EQ(crc32c(data), static_cast<std::uint32_t>(python_value));
}

}  // namespace
}  // namespace dataflux
