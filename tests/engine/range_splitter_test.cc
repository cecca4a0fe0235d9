#include "engine/range_splitter.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace dataflux::internal {
namespace {

using Splits = std::vector<std::string>;

std::uint64_t as_int(const MinimalIntRange& r, std::uint64_t base) {
  std::uint64_t v = 0;
  for (auto d : r.start_digits) v = v * base + d;
  return v;
}

// The golden vectors of dataflux_core/tests/test_range_splitter.py (reference §1.5).
TEST(RangeSplitterTest, GoldenVectors) {
  RangeSplitter digits("0123456789");
  Splits step4;
  for (int k = 1; k <= 24; ++k) {
    int v = (99 * k) / 25;
    step4.push_back(std::string(1, static_cast<char>('0' + v / 10)) +
                    static_cast<char>('0' + v % 10));
  }
  EXPECT_EQ(step4.front(), "03");
  EXPECT_EQ(step4.back(), "95");
  EXPECT_EQ(digits.split_range("", "", 24), step4);
  EXPECT_EQ(digits.split_range("5555", "", 4), (Splits{"63", "72", "81", "90"}));
  EXPECT_EQ(digits.split_range("0", "9", 3), (Splits{"2", "4", "6"}));
  EXPECT_EQ(digits.split_range("0123455111", "012347", 1), (Splits{"012346"}));
  EXPECT_EQ(digits.split_range("199999", "2", 1), (Splits{"1999995"}));
  EXPECT_EQ(digits.split_range("", "9", 1), (Splits{"4"}));
  EXPECT_EQ(digits.split_range("8100", "9100", 3), (Splits{"83", "86", "88"}));
  EXPECT_EQ(digits.split_range("456", "123", 1), Splits{});
  EXPECT_EQ(digits.split_range("9", "90", 100), Splits{});
}

TEST(RangeSplitterTest, MinimalIntRangeGoldenVectors) {
  RangeSplitter digits("0123456789");
  struct Case {
    const char *start, *end;
    int splits;
    std::uint64_t start_int, end_int;
    std::size_t length;
  };
  for (const Case& c : {Case{"06", "201", 4, 6, 20, 2}, Case{"091", "10", 2, 91, 100, 3},
                        Case{"", "", 24, 0, 99, 2}, Case{"199999", "2", 1, 1999990, 2000000, 7}}) {
    MinimalIntRange r = digits.minimal_int_range(c.start, c.end, c.splits);
    EXPECT_EQ(as_int(r, 10), c.start_int) << c.start << " " << c.end;
    EXPECT_EQ(as_int(r, 10) + r.diff, c.end_int) << c.start << " " << c.end;
    EXPECT_EQ(r.length, c.length) << c.start << " " << c.end;
  }
}

TEST(RangeSplitterTest, AlphabetIsDefaultPlusCharactersOfTheRange) {
  RangeSplitter splitter;  // "ab"
  auto alphabet = splitter.alphabet_for("998", "102");
  EXPECT_EQ(alphabet, (std::vector<std::uint32_t>{'0', '1', '2', '8', '9', 'a', 'b'}));
}

TEST(RangeSplitterTest, RejectsWhatCannotBeSplit) {
  RangeSplitter splitter;
  EXPECT_TRUE(splitter.split_range("a", "b", 0).empty());
  EXPECT_TRUE(splitter.split_range("b", "a", 1).empty());
  EXPECT_TRUE(splitter.split_range("abc", "abc", 1).empty());
  EXPECT_TRUE(splitter.split_range("a", "aa", 1).empty());  // equal once padded with 'a'
  // A single-character alphabet never widens; Python used to hang here.
  RangeSplitter one("a");
  EXPECT_TRUE(one.split_range("", "", 1).empty());
}

TEST(RangeSplitterTest, TypicalListerSplitFallsBetweenLastNameAndTheEnd) {
  RangeSplitter splitter;
  auto s = splitter.split_range("images/000123.jpg", "", 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_GT(s[0], "images/000123.jpg");
}

// Code points, not bytes: every split of valid UTF-8 names is valid UTF-8.
TEST(RangeSplitterTest, UnicodeSplitsAreValidUtf8AndInsideTheRange) {
  RangeSplitter splitter;
  const std::vector<std::string> names = {"",
                                          "caf\xc3\xa9/",
                                          "\xc3\xbf\xc3\xbf\xc3\xbf",
                                          "\xe6\x97\xa5\xe6\x9c\xac",
                                          "\xf0\x9f\x98\x80x",
                                          "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf",
                                          "zzz"};
  std::vector<std::uint32_t> code_points;
  for (const auto& a : names) {
    for (const auto& b : names) {
      for (int n : {1, 3, 7}) {
        auto splits = splitter.split_range(a, b, n);
        std::string previous = a;
        for (const auto& s : splits) {
          EXPECT_TRUE(decode_utf8(s, &code_points)) << s;
          EXPECT_GT(s, previous);
          if (!b.empty()) {
            EXPECT_LT(s, b);
          }
          previous = s;
        }
        EXPECT_LE(splits.size(), static_cast<std::size_t>(n));
      }
    }
  }
}

TEST(RangeSplitterTest, InvalidUtf8FallsBackToBytes) {
  RangeSplitter splitter;
  auto s = splitter.split_range(std::string("a\xff\x01", 3), "", 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_GT(s[0], std::string("a\xff\x01", 3));
  auto between = splitter.split_range(std::string("\x80", 1), std::string("\xff", 1), 2);
  EXPECT_FALSE(between.empty());
  for (const auto& x : between) {
    EXPECT_GT(x, std::string("\x80", 1));
    EXPECT_LT(x, std::string("\xff", 1));
  }
}

// Random ranges: splits are strictly inside and increasing, and a range whose ends differ by
// enough always splits.
TEST(RangeSplitterTest, RandomRangesSplitStrictlyInside) {
  std::mt19937 rng(7);
  const std::string chars = "az09/._-AZ";
  RangeSplitter splitter;
  int split_count = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    auto random_name = [&] {
      std::string s;
      int len = static_cast<int>(rng() % 12);
      for (int i = 0; i < len; ++i) s.push_back(chars[rng() % chars.size()]);
      return s;
    };
    std::string a = random_name(), b = rng() % 4 == 0 ? "" : random_name();
    if (!b.empty() && a > b) std::swap(a, b);
    int n = 1 + static_cast<int>(rng() % 8);
    auto splits = splitter.split_range(a, b, n);
    std::string previous = a;
    for (const auto& s : splits) {
      ASSERT_GT(s, previous) << a << " .. " << b;
      if (!b.empty()) {
        ASSERT_LT(s, b) << a << " .. " << b;
      }
      previous = s;
    }
    if (b.empty()) {
      EXPECT_FALSE(splits.empty()) << a;  // an unbounded range always splits
    }
    split_count += !splits.empty();
  }
  EXPECT_GT(split_count, 1000);
}

// Density cuts: after a page of numbered names, unbounded cuts start about pages_per_cut
// pages on and then double; bounded ones divide the rest evenly; all lie strictly inside.
TEST(RangeSplitterTest, ExtrapolatedCutsFollowThePage) {
  RangeSplitter splitter;
  auto cuts = splitter.extrapolate("img/000000", "img/000999", "", 4, 3);
  ASSERT_EQ(cuts.size(), 4u);
  EXPECT_EQ(cuts[0].substr(0, 10), "img/003996");  // last + 3 * (last - first)
  EXPECT_EQ(cuts[1].substr(0, 10), "img/006993");
  EXPECT_EQ(cuts[2].substr(0, 10), "img/012987");  // then the step doubles
  for (std::size_t i = 1; i < cuts.size(); ++i) EXPECT_LT(cuts[i - 1], cuts[i]);
  auto bounded = splitter.extrapolate("img/000000", "img/000999", "img/009999", 8, 3);
  ASSERT_FALSE(bounded.empty());
  EXPECT_EQ(bounded[0].substr(0, 8), "img/0019");  // (9999 - 999) / 9 = 1000 names on
  for (const auto& c : bounded) {
    EXPECT_GT(c, "img/000999");
    EXPECT_LT(c, "img/009999");
  }
  EXPECT_TRUE(splitter.extrapolate("b", "a", "", 3, 3).empty());
  EXPECT_TRUE(splitter.extrapolate("a", "b", "b", 3, 3).empty());
  // Hierarchical names: cuts carry into the higher position instead of staying in one
  // directory.
  auto spread = splitter.extrapolate("c-000/00", "c-000/99", "", 12, 3);
  ASSERT_FALSE(spread.empty());
  EXPECT_GT(spread.back().substr(0, 5), "c-000");
  std::vector<std::uint32_t> cp;
  for (const auto& c : splitter.extrapolate("\xc3\xa9"
                                            "a",
                                            "\xc3\xa9"
                                            "z",
                                            "", 5, 1)) {
    EXPECT_TRUE(decode_utf8(c, &cp));
  }
}

}  // namespace
}  // namespace dataflux::internal
