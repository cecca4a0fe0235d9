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

// Names as messages and listings show them: control bytes (below 0x20, and 0x7f) become \xNN,
// so a name cannot forge a log line or send a terminal escape. Everything else is kept.
std::string printable(std::string_view in);

// "gs://bucket/object", "s3://bucket/key", "file:///root/path": the one URL formatter under
// every store's url(). An empty object gives the bucket's own URL ("gs://bucket"); the names
// are made printable().
std::string display_url(std::string_view scheme, std::string_view bucket, std::string_view object);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_PERCENT_H_
