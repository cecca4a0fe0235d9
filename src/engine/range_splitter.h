// RangeSplitter: cuts a range of object names [start, end) into pieces at "midpoints" in name
// space, so a lister can hand the upper part of its remaining range to an idle worker.
//
// A port of the Python Dataflux splitter (dataflux_core/range_splitter.py, see
// reference/dataflux-spec.md §1.5) with its golden vectors, and two fixes: it splits on
// Unicode code points (a midpoint of two valid UTF-8 names is valid UTF-8; byte midpoints are
// not), and it never fails on ranges it cannot split (it returns no split points).
//
// The idea: read both strings as base-B numbers over an alphabet of B characters (the
// configured ones plus every character of start and end, in code-point order), extend them
// digit by digit until they are more than `num_splits` apart, and return evenly spaced
// numbers between them written back as strings. An empty `end` means unbounded and reads as
// the alphabet's largest character repeated.
//
//   dataflux::internal::RangeSplitter splitter("0123456789");
//   splitter.split_range("0", "9", 3);         // {"2", "4", "6"}
//   splitter.split_range("", "", 24);          // {"03", "07", ..., "95"}
#ifndef DATAFLUX_SRC_ENGINE_RANGE_SPLITTER_H_
#define DATAFLUX_SRC_ENGINE_RANGE_SPLITTER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dataflux::internal {

// The base-B reading of a range (for tests and for the splitter itself). `start_digits` has
// `length` digits, most significant first; end = start + diff. `length` is the smallest
// number of digits at which diff > num_splits.
struct MinimalIntRange {
  std::vector<std::uint32_t> start_digits;
  std::uint64_t diff = 0;
  std::size_t length = 0;
};

class RangeSplitter {
 public:
  // The characters every split may use besides those of start and end. Python's default is
  // "ab": at least two characters, so an unbounded range always widens.
  explicit RangeSplitter(std::string_view alphabet = "ab");

  // Up to `num_splits` strictly increasing names s with start < s and (end empty or s < end).
  // Empty when the range cannot be split (start >= end, or equal once padded) or
  // num_splits < 1. If start or end is not valid UTF-8 the split works on bytes instead.
  std::vector<std::string> split_range(std::string_view start, std::string_view end,
                                       int num_splits) const;

  // Density-based cuts for a lister that has just listed a page of names [first, last] from
  // a range ending at `end` ("" = unbounded): reads the names as base-B numbers and returns
  // up to `num_splits` cuts last + k * step, step = (last - first) * pages_per_cut, that lie
  // before `end`. Where names are spread evenly (numbered files) each cut range then holds
  // about `pages_per_cut` pages. Empty when first >= last or no cut fits; the caller then
  // falls back to split_range().
  std::vector<std::string> extrapolate(std::string_view first, std::string_view last,
                                       std::string_view end, int num_splits,
                                       int pages_per_cut) const;

  // The alphabet and integer reading split_range uses; exposed for the golden-vector tests.
  std::vector<std::uint32_t> alphabet_for(std::string_view start, std::string_view end) const;
  MinimalIntRange minimal_int_range(std::string_view start, std::string_view end,
                                    int num_splits) const;

 private:
  std::string alphabet_;
};

// Decodes UTF-8 into code points; false (and `out` unspecified) if `s` is not valid UTF-8.
bool decode_utf8(std::string_view s, std::vector<std::uint32_t>* out);
void append_utf8(std::uint32_t code_point, std::string* out);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_ENGINE_RANGE_SPLITTER_H_
