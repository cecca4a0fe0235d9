// What the `dataflux` subcommands share: opening a URL's store, naming objects, the worker
// pool that runs many operations at once, failure reports, and byte/time formatting.
#ifndef DATAFLUX_SRC_CLI_COMMON_H_
#define DATAFLUX_SRC_CLI_COMMON_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataflux/listing.h"
#include "dataflux/object_store.h"
#include "dataflux/url.h"

namespace dataflux::cli {

// Exit codes: 0 everything done, 1 some operation failed, 2 the command line was wrong.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

// A URL the user typed, parsed, with the store it lives in.
struct Location {
  std::string text;  // as typed, for messages
  StorageUrl url;
  std::shared_ptr<ObjectStore> store;

  bool is_local() const { return url.scheme == Scheme::kFile; }
  // The URL of `object` in this location's bucket, as listings print it.
  std::string url_of(const std::string& object) const { return store->url(url.bucket, object); }
  // The local path of `object` (file:// only).
  std::string path_of(const std::string& object) const { return "/" + object; }
};

// Parses `text` and opens its store. A URL that does not parse sets *usage_error (exit 2: the
// command line was wrong); a store that cannot be opened (credentials, configuration) does not.
absl::StatusOr<Location> open_location(const std::string& text, bool* usage_error);

// Where the subcommands write: out = results (stdout), err = messages (stderr).
struct Io {
  std::FILE* out = stdout;
  std::FILE* err = stderr;
  bool quiet = false;     // -q: no progress, no summary
  bool terminal = false;  // err is a terminal: draw the live progress line
};

// Collects failures from many threads: each is printed as it happens ("dataflux: ERROR")
// and counted; the command exits 1 when any was.
class Failures {
 public:
  explicit Failures(const Io& io) : io_(io) {}
  void add(const absl::Status& status);
  std::size_t count() const;

 private:
  const Io& io_;
  mutable std::mutex mu_;
  std::size_t count_ = 0;
};

// What a URL names: one object (`exact`), or the objects under `prefix`. A name without a
// trailing '/' is the object of that name when it exists, else the "directory" name + "/".
struct Target {
  std::optional<ObjectMetadata> exact;
  std::string prefix;
};
absl::StatusOr<Target> resolve(const Location& location);

// NotFound: "gs://b/p/ matched no objects".
absl::Status matched_nothing(const Location& location);

// Opens every URL: a URL that does not parse is printed and returns kExitUsage (the command
// stops); a store that does not open is a failure and the URL is left out.
int open_locations(const std::vector<std::string>& urls, const Io& io, Failures& failures,
                   std::vector<Location>* locations);

// The objects a command acting on objects (cp, mv, rm) takes from one URL: the object it
// names, or with `recursive` every object under the prefix (kept by `list`'s filters).
// Failures (nothing matched, a prefix without -r naming `verb`, a listing error) are added to
// `failures` and give nullopt.
struct Expansion {
  bool exact = false;  // the URL named one object
  std::string prefix;  // otherwise: the prefix listed (ends in '/', or empty for a bucket)
  std::vector<ObjectEntry> objects;
};
std::optional<Expansion> expand(const Location& location, bool recursive, const char* verb,
                                const ListOptions& list, Failures& failures);

// Opens each URL in turn and calls each(location); a URL that does not parse stops the
// command (exit 2), a store that does not open is a failure. Returns the exit code.
int for_each_location(const std::vector<std::string>& urls, const Io& io, Failures& failures,
                      const std::function<void(const Location&)>& each);

// Runs task(i) for every i in [0, n), up to `jobs` at once (the calling thread included), and
// returns when all have run: internal::parallel_for on the command's pool.
void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& task);

// "1.5 MiB", "0 B", "999 B".
std::string human_bytes(std::uint64_t bytes);
// A size as people type it: "100000000", "1e8", "100MB", "100M", "1.5GB", "64KiB". K, M, G, T
// are powers of 1000 (WebDataset's maxsize=1e8 is 100MB), Ki, Mi, Gi, Ti of 1024; a trailing B
// is optional; case is ignored. InvalidArgument naming the text for anything else, a negative
// size, more than 2^64-1, or a fraction of a byte ("1.5").
absl::StatusOr<std::uint64_t> parse_size(std::string_view text);
// RFC 3339, UTC, seconds: "2026-11-24T15:04:05Z"; "-" for an unknown time.
std::string rfc3339(std::chrono::system_clock::time_point t);
// The last segment of a name, ignoring one trailing '/': "a/b/c" → "c", "a/b/" → "b".
std::string base_name(const std::string& name);

}  // namespace dataflux::cli

#endif  // DATAFLUX_SRC_CLI_COMMON_H_
