// The `dataflux` subcommands, each a function of its parsed options returning the exit code
// (common.h). cli.cc parses the command line (CLI11) and calls them.
#ifndef DATAFLUX_SRC_CLI_COMMANDS_H_
#define DATAFLUX_SRC_CLI_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/common.h"
#include "dataflux/shards.h"

namespace dataflux::cli {

struct LsOptions {
  std::vector<std::string> urls;
  bool long_form = false;  // -l: size, time, CRC32C, generation or ETag; totals
  bool recursive = false;  // -r: every object under the prefix, not one level
  bool json = false;       // --json: one JSON object per line
};
int run_ls(const LsOptions& options, const Io& io);

struct DuOptions {
  std::vector<std::string> urls;
  bool summarize = false;  // -s: one total per URL
  bool human = false;      // -h: 1.5 MiB instead of 1572864
};
int run_du(const DuOptions& options, const Io& io);

int run_stat(const std::vector<std::string>& urls, const Io& io);

struct CatOptions {
  std::vector<std::string> urls;
  std::string range;  // -r: "START-END" (inclusive), "START-", "-LAST"
};
int run_cat(const CatOptions& options, const Io& io);

struct RmOptions {
  std::vector<std::string> urls;
  bool recursive = false;
  int jobs = 64;
};
int run_rm(const RmOptions& options, const Io& io);

struct CpOptions {
  std::vector<std::string> sources;
  std::string destination;
  bool recursive = false;
  bool no_clobber = false;  // -n: skip objects that exist at the destination (atomically)
  bool move = false;        // mv: delete each source once its copy is published
  int jobs = 64;            // objects in flight
};
int run_cp(const CpOptions& options, const Io& io);

struct PerfdiagOptions {
  std::string url;                          // where the scratch prefix goes
  std::uint64_t large_bytes = 64ull << 20;  // -s: the large object's size
  int small_objects = 200;                  // -n: small objects written and read
  std::uint64_t small_bytes = 64 << 10;     // the small objects' size
};
int run_perfdiag(const PerfdiagOptions& options, const Io& io);

struct PackCommandOptions {
  std::string source;       // a folder tree, SOURCE/CLASS/NAME.EXT as ImageFolder lays it out
  std::string destination;  // the shards' prefix: DEST-000000.tar, DEST-000001.tar, ...
  PackOptions pack;         // the flags; run_pack sets the stores and the progress callback
};
int run_pack(const PackCommandOptions& options, const Io& io);

}  // namespace dataflux::cli

#endif  // DATAFLUX_SRC_CLI_COMMANDS_H_
