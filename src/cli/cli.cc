#include "cli/cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "dataflux/fetch.h"

#ifndef DATAFLUX_VERSION
#define DATAFLUX_VERSION "unknown"
#endif

namespace dataflux::cli {
namespace {

constexpr char kUrlHelp[] = "gs://bucket[/prefix], s3://bucket[/prefix], file:///dir or a path";

// A count or seed in decimal digits, at least `min`: CLI11 alone reads an unsigned option with
// strtoull, so "-1" would become 2^64-1 and "010" would be octal.
CLI::Validator whole_number(std::uint64_t min) {
  return CLI::Validator(
      [min](std::string& text) {
        std::uint64_t value = 0;
        if (text.empty() || !std::all_of(text.begin(), text.end(), absl::ascii_isdigit) ||
            !absl::SimpleAtoi(text, &value)) {
          return absl::StrCat("'", text, "' is not a whole number from ", min, " to 2^64-1");
        }
        if (value < min) return absl::StrCat("must be at least ", min);
        text = std::to_string(value);
        return std::string();
      },
      "");
}

int run_cleanup(const std::string& text, CleanupOptions options, const Io& io) {
  Failures failures(io);
  return for_each_location({text}, io, failures, [&](const Location& t) {
    options.prefix = t.url.object;
    const char* verb = options.dry_run ? "would delete" : "deleted";
    options.on_delete = [&](const ObjectMetadata& object) {
      std::fprintf(io.out, "%s %s\n", verb, t.url_of(object.name).c_str());
      std::fflush(io.out);
    };
    std::size_t aborted = 0;
    options.on_abort = [&](const PendingUpload& upload) {
      ++aborted;
      std::fprintf(io.out, "%s the unfinished upload of %s\n",
                   options.dry_run ? "would abort" : "aborted", t.url_of(upload.object).c_str());
      std::fflush(io.out);
    };
    auto removed = cleanup(*t.store, t.url.bucket, options);
    if (!removed.ok()) return failures.add(removed.status());
    const std::size_t deleted = *removed - aborted;
    std::fprintf(io.out, "%s %zu temporary object%s", verb, deleted, deleted == 1 ? "" : "s");
    if (aborted > 0) {
      std::fprintf(io.out, ", %s %zu unfinished upload%s",
                   options.dry_run ? "would abort" : "aborted", aborted, aborted == 1 ? "" : "s");
    }
    std::fprintf(io.out, "\n");
  });
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{
      "dataflux: list, copy, inspect, pack into shards and clean up objects on gs://, s3:// "
      "and local paths.\n"
      "Exit status: 0 done, 1 an operation failed (each is named), 2 usage.",
      "dataflux"};
  app.set_version_flag("--version", std::string("dataflux ") + DATAFLUX_VERSION);
  app.require_subcommand(1, 1);
  app.failure_message(CLI::FailureMessage::help);  // a usage error shows the usage
  app.fallthrough();
  Io io;
  io.terminal = ::isatty(::fileno(stderr)) == 1;
  app.add_flag("-q,--quiet", io.quiet, "no progress line and no summary");

  LsOptions ls;
  auto* ls_cmd = app.add_subcommand("ls", "list objects (one level; -r: all under the prefix)");
  ls_cmd->add_flag("-l,--long", ls.long_form,
                   "size, update time, CRC32C, generation or ETag, URL; then totals");
  ls_cmd->add_flag("-r,-R,--recursive", ls.recursive, "every object under the prefix");
  ls_cmd->add_flag("--json", ls.json, "one JSON object per line");
  ls_cmd->add_option("URL", ls.urls, kUrlHelp)->required();

  DuOptions du;
  auto* du_cmd = app.add_subcommand("du", "bytes used under each URL (the fast parallel lister)");
  du_cmd->set_help_flag("--help", "Print this help message and exit");
  du_cmd->add_flag("-s,--summarize", du.summarize, "one total per URL");
  du_cmd->add_flag("-h,--human-readable", du.human, "sizes as 1.5 MiB");
  du_cmd->add_option("URL", du.urls, kUrlHelp)->required();

  std::vector<std::string> stat_urls;
  auto* stat_cmd = app.add_subcommand("stat", "an object's metadata");
  stat_cmd->add_option("URL", stat_urls, "object URL")->required();

  CatOptions cat;
  auto* cat_cmd = app.add_subcommand("cat", "write objects to standard output");
  cat_cmd->add_option("-r,--range", cat.range, "bytes START-END (inclusive), START- or -LAST");
  cat_cmd->add_option("URL", cat.urls, "object URL")->required();

  // cp and mv take the same arguments: SRC... DEST and -r, -n, -j.
  auto add_copy = [&app](const char* name, const char* help, CpOptions& options,
                         std::vector<std::string>& args) {
    auto* command = app.add_subcommand(name, help);
    command->add_flag("-r,-R,--recursive", options.recursive, "directories and prefixes too");
    command->add_flag("-n,--no-clobber", options.no_clobber, "skip objects that exist at DEST");
    command->add_option("-j,--jobs", options.jobs, "objects in flight at once")
        ->check(CLI::Range(1, 1024));
    command->add_option("PATHS", args, "SRC... DEST: the sources, then the destination")
        ->required()
        ->expected(2, -1);
    return command;
  };
  CpOptions cp;
  std::vector<std::string> cp_args;
  auto* cp_cmd = add_copy("cp",
                          "copy objects and files: local<->cloud, cloud<->cloud; atomic per "
                          "object, CRC32C checked end to end",
                          cp, cp_args);
  CpOptions mv;
  mv.move = true;
  std::vector<std::string> mv_args;
  auto* mv_cmd =
      add_copy("mv", "move: copy each object as cp does, then delete its source", mv, mv_args);

  RmOptions rm;
  auto* rm_cmd = app.add_subcommand("rm", "delete objects (-r: everything under a prefix)");
  rm_cmd->add_flag("-r,-R,--recursive", rm.recursive, "delete everything under the prefix");
  rm_cmd->add_option("-j,--jobs", rm.jobs, "deletes in flight at once")->check(CLI::Range(1, 1024));
  rm_cmd->add_option("URL", rm.urls, kUrlHelp)->required();

  CleanupOptions cleanup_options;
  std::string cleanup_url;
  std::int64_t min_age = 3600;
  auto* cleanup_cmd = app.add_subcommand(
      "cleanup",
      "delete leftover temporaries under URL: compose batches (dataflux-composed-objects/), "
      "checkpoint parts (*.dataflux-part-*) and unfinished uploads");
  cleanup_cmd
      ->add_option("--min-age", min_age,
                   "seconds: only temporaries at least this old (a running job's are "
                   "younger; 0 deletes all)")
      ->check(CLI::NonNegativeNumber);
  cleanup_cmd->add_flag("--dry-run", cleanup_options.dry_run, "only print what would go");
  cleanup_cmd->add_option("URL", cleanup_url, kUrlHelp)->required();

  PerfdiagOptions perfdiag;
  auto* perfdiag_cmd = app.add_subcommand(
      "perfdiag",
      "measure a bucket (latency, throughput up and down, small objects, listing) on a scratch "
      "prefix it deletes, and suggest dataset and checkpoint options");
  perfdiag_cmd->add_option("-s,--size", perfdiag.large_bytes, "bytes of the large object")
      ->check(CLI::Range(std::uint64_t{1} << 20, std::uint64_t{16} << 30));
  perfdiag_cmd->add_option("-n,--objects", perfdiag.small_objects, "small objects")
      ->check(CLI::Range(1, 100000));
  perfdiag_cmd->add_option("URL", perfdiag.url, "bucket or prefix")->required();

  PackCommandOptions pack;
  std::string pack_compression = "none";
  bool pack_no_shuffle = false;
  bool pack_no_labels = false;
  bool pack_no_index = false;
  auto* pack_cmd = app.add_subcommand(
      "pack",
      "pack a folder tree of objects (SRC/CLASS/NAME.EXT, as ImageFolder lays it out) into tar "
      "shards in the WebDataset conventions: a sample per object, its extension the field, "
      "\"cls\" the index of its class folder; DEST-000000.tar, DEST-000001.tar, ...");
  pack_cmd
      ->add_option("--maxsize", pack.pack.writer.max_size,
                   "bytes per shard at most: 100000000, 1e8, 100MB, 64MiB (a larger sample gets "
                   "a shard of its own)")
      ->transform(CLI::Validator(
          [](std::string& text) {
            auto size = parse_size(text);
            if (!size.ok()) return std::string(size.status().message());
            if (*size == 0) return std::string("must be positive");
            text = std::to_string(*size);
            return std::string();
          },
          "SIZE"))
      ->capture_default_str();
  pack_cmd->add_option("--maxcount", pack.pack.writer.max_count, "samples per shard at most")
      ->transform(whole_number(1))
      ->capture_default_str();
  pack_cmd
      ->add_option("--compression", pack_compression,
                   "none (plain .tar, indexed), gz (.tar.gz) or zst (.tar.zst)")
      ->check(CLI::IsMember({"none", "gz", "zst"}))
      ->capture_default_str();
  pack_cmd->add_flag("--no-shuffle", pack_no_shuffle,
                     "the listing's order (by default a shuffled order, so that every shard "
                     "mixes the classes)");
  pack_cmd->add_option("--seed", pack.pack.seed, "the shuffled order's seed")
      ->transform(whole_number(0))
      ->capture_default_str();
  pack_cmd->add_flag("--no-labels", pack_no_labels,
                     "no \"cls\" from the class folders; objects may then be anywhere under SRC");
  pack_cmd->add_flag("--no-index", pack_no_index,
                     "no SHARD.index.json beside each plain .tar (ShardMapDataset needs it)");
  pack_cmd->add_option("SRC", pack.source, kUrlHelp)->required();
  pack_cmd
      ->add_option("DEST", pack.destination,
                   "the shards' prefix: gs://b/shards/train gives gs://b/shards/train-000000.tar, "
                   "...")
      ->required();

  std::string help_topic;
  auto* help_cmd = app.add_subcommand("help", "help on dataflux or one command");
  help_cmd->add_option("COMMAND", help_topic, "a command");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // help and --version print and exit 0
    return code == 0 ? kExitOk : kExitUsage;
  }

  if (help_cmd->parsed()) {
    // The whole tool's help (app.help() would describe the help command itself).
    const std::string overview =
        app.get_formatter()->make_help(&app, "dataflux", CLI::AppFormatMode::Normal);
    if (help_topic.empty()) {
      std::fputs(overview.c_str(), stdout);
      return kExitOk;
    }
    try {
      std::fputs(app.get_subcommand(help_topic)->help().c_str(), stdout);
      return kExitOk;
    } catch (const CLI::OptionNotFound&) {
      std::fprintf(stderr, "dataflux: no command '%s'\n%s", help_topic.c_str(), overview.c_str());
      return kExitUsage;
    }
  }
  if (ls_cmd->parsed()) return run_ls(ls, io);
  if (du_cmd->parsed()) return run_du(du, io);
  if (stat_cmd->parsed()) return run_stat(stat_urls, io);
  if (cat_cmd->parsed()) return run_cat(cat, io);
  if (rm_cmd->parsed()) return run_rm(rm, io);
  if (cp_cmd->parsed() || mv_cmd->parsed()) {
    CpOptions& options = cp_cmd->parsed() ? cp : mv;
    std::vector<std::string>& args = cp_cmd->parsed() ? cp_args : mv_args;
    options.destination = args.back();
    args.pop_back();
    options.sources = std::move(args);
    return run_cp(options, io);
  }
  if (perfdiag_cmd->parsed()) return run_perfdiag(perfdiag, io);
  if (pack_cmd->parsed()) {
    pack.pack.writer.compression = pack_compression == "none" ? "" : pack_compression;
    pack.pack.shuffle = !pack_no_shuffle;
    pack.pack.labels_from_folders = !pack_no_labels;
    pack.pack.writer.write_index = !pack_no_index;
    return run_pack(pack, io);
  }
  if (cleanup_cmd->parsed()) {
    cleanup_options.min_age = std::chrono::seconds(min_age);
    return run_cleanup(cleanup_url, std::move(cleanup_options), io);
  }
  return kExitUsage;
}

}  // namespace dataflux::cli
