#include "engine/range_splitter.h"

#include <algorithm>

namespace dataflux::internal {
namespace {

// Strings as sequences of symbols: code points when every input is valid UTF-8, else bytes.
// Both readings preserve the byte order GCS and S3 sort names by.
struct Symbols {
  bool utf8 = true;
  std::vector<std::uint32_t> start, end, extra;
};

void bytes_of(std::string_view s, std::vector<std::uint32_t>* out) {
  out->clear();
  for (unsigned char c : s) out->push_back(c);
}

Symbols read_symbols(std::string_view alphabet, std::string_view start, std::string_view end) {
  Symbols s;
  if (decode_utf8(start, &s.start) && decode_utf8(end, &s.end) && decode_utf8(alphabet, &s.extra)) {
    return s;
  }
  s.utf8 = false;
  bytes_of(start, &s.start);
  bytes_of(end, &s.end);
  bytes_of(alphabet, &s.extra);
  return s;
}

std::vector<std::uint32_t> make_alphabet(const Symbols& s) {
  std::vector<std::uint32_t> a = s.extra;
  a.insert(a.end(), s.start.begin(), s.start.end());
  a.insert(a.end(), s.end.begin(), s.end.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

std::uint32_t index_of(const std::vector<std::uint32_t>& alphabet, std::uint32_t symbol) {
  return static_cast<std::uint32_t>(std::lower_bound(alphabet.begin(), alphabet.end(), symbol) -
                                    alphabet.begin());
}

std::string encode(const std::vector<std::uint32_t>& symbols, bool utf8) {
  std::string out;
  for (std::uint32_t c : symbols) {
    if (utf8) {
      append_utf8(c, &out);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

// Python's is_range_equal_with_padding: equal once the shorter is padded with the smallest
// character. An unbounded end is never equal.
bool equal_with_padding(const Symbols& s, std::uint32_t min_char, bool unbounded) {
  if (unbounded) return false;
  const std::size_t n = std::max(s.start.size(), s.end.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t a = i < s.start.size() ? s.start[i] : min_char;
    std::uint32_t b = i < s.end.size() ? s.end[i] : min_char;
    if (a != b) return false;
  }
  return true;
}

MinimalIntRange minimal_range(const Symbols& s, const std::vector<std::uint32_t>& alphabet,
                              bool unbounded, std::uint64_t num_splits) {
  MinimalIntRange r;
  const std::int64_t base = static_cast<std::int64_t>(alphabet.size());
  // Once both strings are exhausted the difference grows by a factor of `base` per digit, so
  // this bound is never reached for a splittable range; it only guards misuse.
  const std::size_t limit = std::max(s.start.size(), s.end.size()) + 64;
  std::int64_t diff = 0;
  for (std::size_t i = 0; i < limit; ++i) {
    std::int64_t a = i < s.start.size() ? index_of(alphabet, s.start[i]) : 0;
    std::int64_t b = i < s.end.size() ? index_of(alphabet, s.end[i]) : (unbounded ? base - 1 : 0);
    r.start_digits.push_back(static_cast<std::uint32_t>(a));
    diff = diff * base + (b - a);
    if (diff > static_cast<std::int64_t>(num_splits)) {
      r.diff = static_cast<std::uint64_t>(diff);
      r.length = i + 1;
      return r;
    }
    if (diff < 0) break;  // start > end: nothing to split
  }
  r.diff = 0;
  r.length = 0;
  return r;
}

constexpr std::uint64_t kMaxSplits = 1 << 16;

}  // namespace

bool decode_utf8(std::string_view s, std::vector<std::uint32_t>* out) {
  out->clear();
  std::size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    std::uint32_t cp;
    std::size_t n;
    if (c < 0x80) {
      cp = c;
      n = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      n = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      n = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      n = 4;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    out->push_back(cp);
    i += n;
  }
  return true;
}

void append_utf8(std::uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

RangeSplitter::RangeSplitter(std::string_view alphabet) : alphabet_(alphabet) {}

std::vector<std::uint32_t> RangeSplitter::alphabet_for(std::string_view start,
                                                       std::string_view end) const {
  return make_alphabet(read_symbols(alphabet_, start, end));
}

MinimalIntRange RangeSplitter::minimal_int_range(std::string_view start, std::string_view end,
                                                 int num_splits) const {
  Symbols s = read_symbols(alphabet_, start, end);
  auto alphabet = make_alphabet(s);
  if (alphabet.size() < 2 || num_splits < 1) return {};
  return minimal_range(s, alphabet, end.empty(),
                       std::min<std::uint64_t>(static_cast<std::uint64_t>(num_splits), kMaxSplits));
}

std::vector<std::string> RangeSplitter::split_range(std::string_view start, std::string_view end,
                                                    int num_splits) const {
  if (num_splits < 1) return {};
  const bool unbounded = end.empty();
  if (!unbounded && start >= end) return {};
  Symbols s = read_symbols(alphabet_, start, end);
  const std::vector<std::uint32_t> alphabet = make_alphabet(s);
  // A one-character alphabet never widens an unbounded range (the pre-#66 Python hang).
  if (alphabet.size() < 2) return {};
  if (equal_with_padding(s, alphabet.front(), unbounded)) return {};
  const std::uint64_t n =
      std::min<std::uint64_t>(static_cast<std::uint64_t>(num_splits), kMaxSplits);
  MinimalIntRange r = minimal_range(s, alphabet, unbounded, n);
  if (r.length == 0) return {};

  const std::uint64_t base = alphabet.size();
  std::vector<std::string> out;
  std::vector<std::uint32_t> digits;
  std::vector<std::uint32_t> symbols;
  for (std::uint64_t k = 1; k <= n; ++k) {
    // Python computes int(start + Fraction(diff / (n + 1)) * k) through a float; exact integer
    // arithmetic agrees on every golden vector and cannot round across a digit.
    auto offset = static_cast<std::uint64_t>(static_cast<unsigned __int128>(r.diff) * k / (n + 1));
    digits = r.start_digits;
    for (std::size_t i = digits.size(); i-- > 0 && offset > 0;) {
      const std::uint64_t v = digits[i] + offset;
      digits[i] = static_cast<std::uint32_t>(v % base);
      offset = v / base;
    }
    symbols.clear();
    for (std::uint32_t d : digits) symbols.push_back(alphabet[d]);
    std::string split = encode(symbols, s.utf8);
    if (split <= start || (!unbounded && split >= end)) continue;
    if (!out.empty() && split <= out.back()) continue;
    out.push_back(std::move(split));
  }
  return out;
}

std::vector<std::string> RangeSplitter::extrapolate(std::string_view first, std::string_view last,
                                                    std::string_view end, int num_splits,
                                                    int pages_per_cut) const {
  if (num_splits < 1 || pages_per_cut < 1 || first > last) return {};
  const bool unbounded = end.empty();
  if (!unbounded && last >= end) return {};
  std::string chars = alphabet_;
  chars.append(first.data(), first.size());
  Symbols s = read_symbols(chars, last, end);
  std::vector<std::uint32_t> first_symbols;
  if (s.utf8) {
    decode_utf8(first, &first_symbols);
  } else {
    bytes_of(first, &first_symbols);
  }
  const std::vector<std::uint32_t> global = make_alphabet(s);
  // A mixed-radix reading: each position counts in the characters found there in the
  // names, widened to their whole run (a digit stands for 0-9, a letter for its case's
  // alphabet). With one alphabet for all positions "class-007" would be followed by
  // "class-00a": cuts where no name can be. Two positions beyond the longest name (counting
  // in every character seen) keep a dense page's width above zero.
  const std::size_t length =
      std::max({first_symbols.size(), s.start.size(), unbounded ? 0 : s.end.size()}) + 2;
  std::vector<std::vector<std::uint32_t>> sets(length);
  for (std::size_t i = 0; i < length; ++i) {
    auto& set = sets[i];
    for (const auto* name : {&first_symbols, &s.start, &s.end}) {
      if (i >= name->size()) continue;
      const std::uint32_t c = (*name)[i];
      bool widened = false;
      for (auto [lo, hi] :
           {std::pair<std::uint32_t, std::uint32_t>{'0', '9'}, {'a', 'z'}, {'A', 'Z'}}) {
        if (c >= lo && c <= hi) {
          for (std::uint32_t x = lo; x <= hi; ++x) set.push_back(x);
          widened = true;
        }
      }
      if (!widened) set.push_back(c);
    }
    if (set.empty()) set = global;
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
  }
  using Number = std::vector<std::uint64_t>;  // most significant digit first
  auto read = [&](const std::vector<std::uint32_t>& symbols) {
    Number d(length, 0);
    for (std::size_t i = 0; i < symbols.size() && i < length; ++i)
      d[i] = index_of(sets[i], symbols[i]);
    return d;
  };
  auto subtract = [&](const Number& a, const Number& b, Number* out) {  // false if a < b
    out->assign(length, 0);
    std::int64_t borrow = 0;
    for (std::size_t i = length; i-- > 0;) {
      std::int64_t v = static_cast<std::int64_t>(a[i]) - static_cast<std::int64_t>(b[i]) - borrow;
      borrow = v < 0;
      (*out)[i] =
          static_cast<std::uint64_t>(v + (borrow ? static_cast<std::int64_t>(sets[i].size()) : 0));
    }
    return borrow == 0;
  };
  auto multiply = [&](Number* a, std::uint64_t m) {  // false on overflow
    std::uint64_t carry = 0;
    for (std::size_t i = length; i-- > 0;) {
      const std::uint64_t v = (*a)[i] * m + carry;
      (*a)[i] = v % sets[i].size();
      carry = v / sets[i].size();
    }
    return carry == 0;
  };
  auto divide = [&](Number* a, std::uint64_t m) {
    std::uint64_t remainder = 0;
    for (std::size_t i = 0; i < length; ++i) {
      const std::uint64_t v = remainder * sets[i].size() + (*a)[i];
      (*a)[i] = v / m;
      remainder = v % m;
    }
  };
  auto add = [&](Number* a, const Number& b) {  // false on overflow
    std::uint64_t carry = 0;
    for (std::size_t i = length; i-- > 0;) {
      const std::uint64_t v = (*a)[i] + b[i] + carry;
      (*a)[i] = v % sets[i].size();
      carry = v / sets[i].size();
    }
    return carry == 0;
  };
  auto is_zero = [](const Number& a) {
    return std::all_of(a.begin(), a.end(), [](std::uint64_t d) { return d == 0; });
  };

  Number cut = read(s.start);
  // Bounded: the rest is known, cut it evenly. Unbounded: steps that double from what one
  // page spans times pages_per_cut, so cuts reach both the next few pages (numbered names)
  // and far-away parts of the name space (a hierarchy that carries into a higher position).
  Number step;
  const std::uint64_t n = static_cast<std::uint64_t>(std::min(num_splits, 1 << 16));
  if (!unbounded) {
    if (!subtract(read(s.end), cut, &step)) return {};
    divide(&step, n + 1);
  } else {
    if (!subtract(cut, read(first_symbols), &step)) return {};
    if (!multiply(&step, static_cast<std::uint64_t>(pages_per_cut))) return {};
  }
  if (is_zero(step)) return {};
  std::vector<std::string> out;
  std::vector<std::uint32_t> symbols;
  std::string previous(last);
  for (std::uint64_t k = 0; k < n; ++k) {
    if (!add(&cut, step)) break;  // past the largest name of this length
    if (unbounded && k > 0 && !multiply(&step, 2)) break;
    symbols.clear();
    for (std::size_t i = 0; i < length; ++i) symbols.push_back(sets[i][cut[i]]);
    std::string split = encode(symbols, s.utf8);
    if (!unbounded && split >= end) break;
    if (split <= previous) continue;
    previous = split;
    out.push_back(std::move(split));
  }
  return out;
}

}  // namespace dataflux::internal
