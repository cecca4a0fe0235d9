// The bridge between std::string_view and Debian's Abseil string_view, which is its own class
// (ABSL_USES_STD_STRING_VIEW is off in libabsl-dev 20220623), so absl::StrSplit, SimpleAtoi,
// StrCat and friends cannot take a std::string_view directly. The one copy of this shim.
//
//   absl::SimpleAtoi(internal::av(text), &value);
//   std::string_view s = internal::sv(absl::StripAsciiWhitespace(internal::av(text)));
#ifndef DATAFLUX_SRC_CORE_ABSL_VIEW_H_
#define DATAFLUX_SRC_CORE_ABSL_VIEW_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace dataflux::internal {

inline absl::string_view av(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view sv(absl::string_view s) { return std::string_view(s.data(), s.size()); }

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_ABSL_VIEW_H_
