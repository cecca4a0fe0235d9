// ls, du, stat, cat: the subcommands that look at objects without changing them.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cinttypes>
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "dataflux/crc32c.h"
#include "dataflux/listing.h"

namespace dataflux::cli {
namespace {

std::string version_of(const ObjectMetadata& object) {
  if (!object.etag.empty()) return object.etag;
  if (object.generation != 0) return absl::StrCat("#", object.generation);
  return "-";
}

std::string crc_text(const std::optional<std::uint32_t>& crc) {
  return crc ? crc32c_to_base64(*crc) : "-";
}

void write_json_object(std::FILE* out, const std::string& url, const ObjectMetadata* object) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("url");
  w.String(url);
  if (object == nullptr) {
    w.Key("prefix");
    w.Bool(true);
  } else {
    w.Key("name");
    w.String(object->name);
    w.Key("size");
    w.Uint64(object->size);
    w.Key("updated");
    w.String(rfc3339(object->updated));
    if (object->generation != 0) {
      w.Key("generation");
      w.Int64(object->generation);
      w.Key("metageneration");
      w.Int64(object->metageneration);
    }
    if (!object->etag.empty()) {
      w.Key("etag");
      w.String(object->etag);
    }
    if (object->crc32c) {
      w.Key("crc32c");
      w.String(crc32c_to_base64(*object->crc32c));
    }
    if (!object->md5_hash.empty()) {
      w.Key("md5");
      w.String(object->md5_hash);
    }
    if (!object->content_type.empty()) {
      w.Key("content_type");
      w.String(object->content_type);
    }
    if (!object->storage_class.empty()) {
      w.Key("storage_class");
      w.String(object->storage_class);
    }
  }
  w.EndObject();
  std::fprintf(out, "%s\n", buffer.GetString());
}

class LsPrinter {
 public:
  LsPrinter(const LsOptions& options, const Io& io) : options_(options), io_(io) {}

  void object(const Location& location, const ObjectMetadata& object) {
    ++objects_;
    bytes_ += object.size;
    const std::string url = location.url_of(object.name);
    if (options_.json) {
      write_json_object(io_.out, url, &object);
    } else if (options_.long_form) {
      std::fprintf(io_.out, "%12" PRIu64 "  %-20s  %-10s  %-18s  %s\n",
                   static_cast<std::uint64_t>(object.size), rfc3339(object.updated).c_str(),
                   crc_text(object.crc32c).c_str(), version_of(object).c_str(), url.c_str());
    } else {
      std::fprintf(io_.out, "%s\n", url.c_str());
    }
  }
  void prefix(const Location& location, const std::string& prefix) {
    ++prefixes_;
    const std::string url = location.url_of(prefix);
    if (options_.json) {
      write_json_object(io_.out, url, nullptr);
    } else if (options_.long_form) {
      std::fprintf(io_.out, "%12s  %-20s  %-10s  %-18s  %s\n", "", "", "", "", url.c_str());
    } else {
      std::fprintf(io_.out, "%s\n", url.c_str());
    }
  }
  void totals() const {
    if (!options_.long_form || options_.json) return;
    std::fprintf(io_.out, "TOTAL: %" PRIu64 " object%s, %" PRIu64 " bytes (%s)\n", objects_,
                 objects_ == 1 ? "" : "s", bytes_, human_bytes(bytes_).c_str());
  }
  std::uint64_t entries() const { return objects_ + prefixes_; }

 private:
  const LsOptions& options_;
  const Io& io_;
  std::uint64_t objects_ = 0;
  std::uint64_t prefixes_ = 0;
  std::uint64_t bytes_ = 0;
};

absl::Status ls_one(const Location& location, const LsOptions& options, LsPrinter& printer) {
  auto target = resolve(location);
  if (!target.ok()) return target.status();
  const std::uint64_t before = printer.entries();
  if (target->exact) {
    printer.object(location, *target->exact);
    return absl::OkStatus();
  }
  if (options.recursive && !options.long_form && !options.json) {
    // Names only: the fast parallel lister.
    ListOptions list;
    list.skip_directory_placeholders = false;
    list.skip_temporary_objects = false;
    auto listing = list_objects_fast(*location.store, location.url.bucket, target->prefix, list);
    if (!listing.ok()) return listing.status();
    for (std::size_t i = 0; i < listing->size(); ++i) {
      ObjectMetadata object;
      object.name = std::string(listing->name(i));
      printer.object(location, object);
    }
  } else {
    ListObjectsRequest request;
    request.bucket = location.url.bucket;
    request.prefix = target->prefix;
    if (!options.recursive) request.delimiter = "/";
    do {
      auto page = location.store->list_objects(request);
      if (!page.ok()) return page.status();
      // Objects and prefixes in one name order, as one listing.
      std::size_t o = 0;
      std::size_t p = 0;
      while (o < page->objects.size() || p < page->prefixes.size()) {
        if (p >= page->prefixes.size() ||
            (o < page->objects.size() && page->objects[o].name < page->prefixes[p])) {
          printer.object(location, page->objects[o++]);
        } else {
          printer.prefix(location, page->prefixes[p++]);
        }
      }
      request.page_token = page->next_page_token;
    } while (!request.page_token.empty());
  }
  if (printer.entries() == before && !location.url.object.empty()) {
    return matched_nothing(location);
  }
  return absl::OkStatus();
}

}  // namespace

int run_ls(const LsOptions& options, const Io& io) {
  Failures failures(io);
  LsPrinter printer(options, io);
  const int code = for_each_location(options.urls, io, failures, [&](const Location& location) {
    if (auto s = ls_one(location, options, printer); !s.ok()) failures.add(s);
  });
  if (code != kExitUsage) printer.totals();
  return code;
}

int run_du(const DuOptions& options, const Io& io) {
  Failures failures(io);
  auto size_text = [&](std::uint64_t bytes) {
    return options.human ? human_bytes(bytes) : std::to_string(bytes);
  };
  return for_each_location(options.urls, io, failures, [&](const Location& location) {
    auto target = resolve(location);
    if (!target.ok()) return failures.add(target.status());
    std::uint64_t total = 0;
    if (target->exact) {
      total = target->exact->size;
    } else {
      ListOptions list;  // every object, temporaries included: they take space too
      list.skip_directory_placeholders = false;
      list.skip_temporary_objects = false;
      auto listing = list_objects_fast(*location.store, location.url.bucket, target->prefix, list);
      if (!listing.ok()) return failures.add(listing.status());
      if (listing->size() == 0 && !location.url.object.empty()) {
        return failures.add(matched_nothing(location));
      }
      for (std::size_t i = 0; i < listing->size(); ++i) {
        const std::uint64_t size = listing->object_size(i);
        total += size;
        if (!options.summarize) {
          std::fprintf(io.out, "%-12s  %s\n", size_text(size).c_str(),
                       location.url_of(std::string(listing->name(i))).c_str());
        }
      }
    }
    std::fprintf(io.out, "%-12s  %s\n", size_text(total).c_str(),
                 location.url_of(location.url.object).c_str());
  });
}

int run_stat(const std::vector<std::string>& urls, const Io& io) {
  Failures failures(io);
  return for_each_location(urls, io, failures, [&](const Location& location) {
    const std::string& name = location.url.object;
    if (name.empty() || absl::EndsWith(name, "/")) {
      return failures.add(absl::InvalidArgumentError(
          absl::StrCat("stat ", location.url.to_string(), ": not an object URL (a prefix)")));
    }
    auto object = location.store->get_object_metadata(location.url.bucket, name);
    if (!object.ok()) return failures.add(object.status());
    std::fprintf(io.out, "%s:\n", location.url_of(name).c_str());
    auto row = [&](const char* key, const std::string& value) {
      if (!value.empty()) std::fprintf(io.out, "    %-16s%s\n", key, value.c_str());
    };
    row("Size:", std::to_string(object->size));
    row("Updated:", rfc3339(object->updated));
    row("Content-Type:", object->content_type);
    row("CRC32C:", object->crc32c ? crc32c_to_base64(*object->crc32c) : "");
    row("MD5:", object->md5_hash);
    row("Generation:", object->generation != 0 ? std::to_string(object->generation) : "");
    row("Metageneration:",
        object->metageneration != 0 ? std::to_string(object->metageneration) : "");
    row("ETag:", object->etag);
    row("Storage class:", object->storage_class);
  });
}

// "START-END" (inclusive), "START-", "-LAST".
static absl::Status parse_range(const std::string& text, std::uint64_t size, std::uint64_t* offset,
                                std::optional<std::uint64_t>* length) {
  const std::size_t dash = text.find('-');
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("bad range '", text, "': want START-END, START- or -LAST (bytes)"));
  };
  if (dash == std::string::npos) return bad();
  const std::string first = text.substr(0, dash);
  const std::string last = text.substr(dash + 1);
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  if (first.empty()) {
    if (!absl::SimpleAtoi(last, &b)) return bad();
    *offset = size > b ? size - b : 0;
    *length = size - *offset;
    return absl::OkStatus();
  }
  if (!absl::SimpleAtoi(first, &a)) return bad();
  *offset = a;
  if (last.empty()) return absl::OkStatus();
  if (!absl::SimpleAtoi(last, &b) || b < a) return bad();
  *length = b - a + 1;
  return absl::OkStatus();
}

int run_cat(const CatOptions& options, const Io& io) {
  Failures failures(io);
  return for_each_location(options.urls, io, failures, [&](const Location& location) {
    const std::string& name = location.url.object;
    auto object = location.store->get_object_metadata(location.url.bucket, name);
    if (!object.ok()) return failures.add(object.status());
    ReadObjectRequest request;
    request.bucket = location.url.bucket;
    request.object = name;
    request.generation = object->generation != 0 ? std::optional(object->generation) : std::nullopt;
    request.etag = object->etag;
    request.expected_crc32c = object->crc32c;
    if (!options.range.empty()) {
      if (auto s = parse_range(options.range, object->size, &request.offset, &request.length);
          !s.ok()) {
        return failures.add(s);
      }
      if (request.offset >= object->size) {
        if (object->size == 0 || request.length == std::optional<std::uint64_t>(0)) return;
        return failures.add(absl::OutOfRangeError(
            absl::StrCat("cat ", location.url_of(name), ": range starts at ", request.offset,
                         ", past the end (", object->size, " bytes)")));
      }
      if (request.length) {
        request.length = std::min(*request.length, object->size - request.offset);
      }
    }
    auto result = location.store->read_object(request, [&](const char* data, std::size_t n) {
      if (std::fwrite(data, 1, n, io.out) != n) {
        return absl::DataLossError("cat: writing to standard output failed");
      }
      return absl::OkStatus();
    });
    std::fflush(io.out);
    if (!result.ok()) failures.add(result.status());
  });
}

}  // namespace dataflux::cli
