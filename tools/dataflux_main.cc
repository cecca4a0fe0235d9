// dataflux: the command-line tool for chores around a bucket (torch-free, on the engine layer).
//
//   dataflux cleanup URL [--min-age SECONDS] [--dry-run]
//       Deletes the temporary objects a crashed job left under URL: compose batches
//       (dataflux-composed-objects/...) and checkpoint parts (*.dataflux-part-*). Prints each
//       deleted object's URL, then a count.
//   dataflux ls URL
//       Lists the objects under URL: one "NAME<TAB>SIZE" line each.
//
// URL is gs://bucket[/prefix], s3://bucket[/prefix], file:///dir/ or a plain path; the usual
// environment (STORAGE_EMULATOR_HOST, GOOGLE_APPLICATION_CREDENTIALS, AWS_*) applies.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/strings/numbers.h"
#include "dataflux/fetch.h"
#include "dataflux/object_store.h"
#include "dataflux/open_store.h"
#include "dataflux/url.h"
#include "engine/upload_parts.h"

namespace {

constexpr char kUsage[] =
    "Usage:\n"
    "  dataflux cleanup URL [--min-age SECONDS] [--dry-run]\n"
    "      delete leftover temporaries under URL: compose batches (dataflux-composed-objects/)\n"
    "      and checkpoint parts (*.dataflux-part-*) at least --min-age old (default 3600:\n"
    "      a running job's are younger; 0 deletes all), --dry-run only prints what would go\n"
    "  dataflux ls URL\n"
    "      list the objects under URL, one NAME<TAB>SIZE line each\n"
    "URL: gs://bucket[/prefix], s3://bucket[/prefix], file:///dir/ or a path.\n";

int usage(const char* problem) {
  if (problem != nullptr) std::fprintf(stderr, "dataflux: %s\n", problem);
  std::fputs(kUsage, stderr);
  return 2;
}

int fail(const absl::Status& status) {
  std::fprintf(stderr, "dataflux: %s\n", status.ToString().c_str());
  return 1;
}

struct Target {
  dataflux::StorageUrl url;
  std::shared_ptr<dataflux::ObjectStore> store;
};

absl::StatusOr<Target> open(const std::string& text) {
  auto url = dataflux::StorageUrl::parse(text);
  if (!url.ok()) return url.status();
  auto store = dataflux::open_store(*url);
  if (!store.ok()) return store.status();
  return Target{*std::move(url), *std::move(store)};
}

int run_ls(const Target& t) {
  dataflux::ListObjectsRequest list;
  list.bucket = t.url.bucket;
  list.prefix = t.url.object;
  do {
    auto page = t.store->list_objects(list);
    if (!page.ok()) return fail(page.status());
    for (const auto& object : page->objects) {
      std::printf("%s\t%llu\n", t.store->url(t.url.bucket, object.name).c_str(),
                  static_cast<unsigned long long>(object.size));
    }
    list.page_token = page->next_page_token;
  } while (!list.page_token.empty());
  return 0;
}

int run_cleanup(const Target& t, dataflux::CleanupOptions options) {
  options.prefix = t.url.object;
  const char* verb = options.dry_run ? "would delete" : "deleted";
  options.on_delete = [&](const dataflux::ObjectMetadata& object) {
    std::printf("%s %s\n", verb, t.store->url(t.url.bucket, object.name).c_str());
    std::fflush(stdout);
  };
  std::size_t aborted = 0;
  options.on_abort = [&](const dataflux::PendingUpload& upload) {
    ++aborted;
    std::printf("%s the unfinished upload of %s\n", options.dry_run ? "would abort" : "aborted",
                t.store->url(t.url.bucket, upload.object).c_str());
    std::fflush(stdout);
  };
  auto removed = dataflux::cleanup(*t.store, t.url.bucket, options);
  if (!removed.ok()) return fail(removed.status());
  const std::size_t deleted = *removed - aborted;
  std::printf("%s %zu temporary object%s", verb, deleted, deleted == 1 ? "" : "s");
  if (aborted > 0) {
    std::printf(", %s %zu unfinished upload%s", options.dry_run ? "would abort" : "aborted",
                aborted, aborted == 1 ? "" : "s");
  }
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(nullptr);
  const std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command != "cleanup" && command != "ls") {
    return usage(("unknown command '" + command + "'").c_str());
  }
  std::string url;
  dataflux::CleanupOptions options;
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (command == "cleanup" && arg == "--dry-run") {
      options.dry_run = true;
    } else if (command == "cleanup" && arg == "--min-age") {
      std::int64_t seconds = 0;
      if (i + 1 >= argc || !absl::SimpleAtoi(argv[i + 1], &seconds) || seconds < 0) {
        return usage("--min-age wants a number of seconds");
      }
      options.min_age = std::chrono::seconds(seconds);
      ++i;
    } else if (!arg.empty() && arg[0] == '-') {
      return usage(("unknown option '" + std::string(arg) + "'").c_str());
    } else if (url.empty()) {
      url = std::string(arg);
    } else {
      return usage("one URL only");
    }
  }
  if (url.empty()) return usage("no URL");
  auto target = open(url);
  if (!target.ok()) return fail(target.status());
  return command == "ls" ? run_ls(*target) : run_cleanup(*target, std::move(options));
}
