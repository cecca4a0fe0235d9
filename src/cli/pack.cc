// pack: a folder tree of objects (SRC/CLASS/NAME.EXT, as ImageFolder lays it out) into tar
// shards in the WebDataset conventions, by dataflux::pack_objects (dataflux/shards.h). The
// shards' URLs go to stdout, one a line, for scripts; the live line and the summary to stderr.
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/progress.h"

namespace dataflux::cli {

int run_pack(const PackCommandOptions& options, const Io& io) {
  // Both URLs are checked before anything is listed: a mistyped one is a usage error (exit 2).
  bool usage = false;
  auto source = open_location(options.source, &usage);
  if (!source.ok()) {
    std::fprintf(io.err, "dataflux: %s\n", source.status().ToString().c_str());
    return usage ? kExitUsage : kExitFailed;
  }
  auto destination = open_location(options.destination, &usage);
  if (!destination.ok()) {
    std::fprintf(io.err, "dataflux: %s\n", destination.status().ToString().c_str());
    return usage ? kExitUsage : kExitFailed;
  }

  PackOptions pack = options.pack;
  pack.source_store = source->store;
  pack.writer.store = destination->store;
  // pack_objects learns the count of objects from its listing and reports after each sample
  // (from one thread): how many so far, of how many, and their bytes.
  Progress progress(io, "Packed", Progress::kUnknown, Progress::kUnknown);
  std::uint64_t reported_samples = 0;
  std::uint64_t reported_bytes = 0;
  pack.progress = [&](std::uint64_t samples, std::uint64_t total, std::uint64_t bytes) {
    progress.set_total_objects(total);
    for (; reported_samples < samples; ++reported_samples) progress.object_done();
    progress.add_bytes(bytes - reported_bytes);
    reported_bytes = bytes;
  };
  auto packed = pack_objects(options.source, options.destination, std::move(pack));
  progress.stop();
  if (!packed.ok()) {
    Failures failures(io);
    failures.add(packed.status());
    return kExitFailed;
  }
  for (const auto& shard : packed->shards) std::fprintf(io.out, "%s\n", shard.url.c_str());
  std::fflush(io.out);
  const std::size_t shards = packed->shards.size();
  std::string detail = absl::StrCat(shards, shards == 1 ? " shard" : " shards");
  if (options.pack.labels_from_folders) {
    const std::size_t classes = packed->classes.size();
    absl::StrAppend(&detail, ", ", classes, classes == 1 ? " class" : " classes");
  } else {
    absl::StrAppend(&detail, ", no labels");
  }
  progress.finish(detail);
  return kExitOk;
}

}  // namespace dataflux::cli
