// Percent-encoding (RFC 3986): every byte outside the unreserved set A-Z a-z 0-9 - . _ ~
// becomes %XX (upper-case hex). One rule serves GCS paths and query values, SigV4's canonical
// URIs and queries (with '/' kept in object keys), form bodies (OAuth token requests) and the
// emulator's Location headers.
//
//   percent_encode("a b/c");                       // "a%20b%2Fc"
//   percent_encode("a b/c", /*keep_slash=*/true);  // "a%20b/c"
#ifndef DATAFLUX_SRC_CORE_PERCENT_H_
#define DATAFLUX_SRC_CORE_PERCENT_H_

#include <string>
#include <string_view>

namespace dataflux::internal {

std::string percent_encode(std::string_view in, bool keep_slash = false);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_PERCENT_H_
