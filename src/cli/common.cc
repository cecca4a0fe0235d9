#include "cli/common.h"

#include <algorithm>
#include <ctime>

#include "absl/numeric/int128.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/absl_view.h"
#include "core/thread_pool.h"
#include "dataflux/open_store.h"

namespace dataflux::cli {

absl::StatusOr<Location> open_location(const std::string& text, bool* usage_error) {
  *usage_error = false;
  auto url = StorageUrl::parse(text);
  if (!url.ok()) {
    *usage_error = true;
    return url.status();
  }
  auto store = open_store(*url);
  if (!store.ok()) return store.status();
  return Location{text, *std::move(url), *std::move(store)};
}

absl::StatusOr<Target> resolve(const Location& location) {
  Target target;
  target.prefix = location.url.object;
  if (target.prefix.empty() || absl::EndsWith(target.prefix, "/")) return target;
  auto metadata = location.store->get_object_metadata(location.url.bucket, target.prefix);
  if (metadata.ok()) {
    target.exact = *std::move(metadata);
    return target;
  }
  if (!absl::IsNotFound(metadata.status())) return metadata.status();
  target.prefix += "/";
  return target;
}

absl::Status matched_nothing(const Location& location) {
  return absl::NotFoundError(absl::StrCat(location.url.to_string(), " matched no objects"));
}

int open_locations(const std::vector<std::string>& urls, const Io& io, Failures& failures,
                   std::vector<Location>* locations) {
  for (const auto& text : urls) {
    bool usage = false;
    auto location = open_location(text, &usage);
    if (!location.ok()) {
      if (usage) {
        std::fprintf(io.err, "dataflux: %s\n", location.status().ToString().c_str());
        return kExitUsage;
      }
      failures.add(location.status());
      continue;
    }
    locations->push_back(*std::move(location));
  }
  return kExitOk;
}

std::optional<Expansion> expand(const Location& location, bool recursive, const char* verb,
                                const ListOptions& list, Failures& failures) {
  auto target = resolve(location);
  if (!target.ok()) {
    failures.add(target.status());
    return std::nullopt;
  }
  Expansion out;
  if (target->exact) {
    out.exact = true;
    out.objects.emplace_back(*target->exact);
    return out;
  }
  if (!recursive) {
    failures.add(absl::InvalidArgumentError(
        absl::StrCat(verb, " ", location.url.to_string(),
                     ": a directory or prefix, not an object (use ", verb, " -r)")));
    return std::nullopt;
  }
  auto listing = list_objects_fast(*location.store, location.url.bucket, target->prefix, list);
  if (!listing.ok()) {
    failures.add(listing.status());
    return std::nullopt;
  }
  if (listing->empty()) {
    failures.add(matched_nothing(location));
    return std::nullopt;
  }
  out.prefix = target->prefix;
  out.objects.assign(listing->begin(), listing->end());
  return out;
}

int for_each_location(const std::vector<std::string>& urls, const Io& io, Failures& failures,
                      const std::function<void(const Location&)>& each) {
  std::vector<Location> locations;
  if (open_locations(urls, io, failures, &locations) == kExitUsage) return kExitUsage;
  for (const auto& location : locations) each(location);
  return failures.count() > 0 ? kExitFailed : kExitOk;
}

void Failures::add(const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++count_;
  std::fprintf(io_.err, "%sdataflux: %s\n", io_.terminal ? "\r\x1b[K" : "",
               status.ToString().c_str());
  std::fflush(io_.err);
}

std::size_t Failures::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& task) {
  // The library's TaskGroup (its waiter runs queued tasks itself, so nesting cannot stall) on
  // a pool of the command's own: the library's blocking pool (64 threads) also carries the
  // Uploader's parts, which a command's 64 jobs must not crowd out.
  static internal::ProcessThreadPool pool(1024);
  (void)internal::parallel_for(pool.get(), static_cast<int>(n), jobs, [&](int i) {
    task(static_cast<std::size_t>(i));
    return absl::OkStatus();
  });
}

std::string human_bytes(std::uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

absl::StatusOr<std::uint64_t> parse_size(std::string_view text) {
  auto bad = [&](const char* why) {
    return absl::InvalidArgumentError(absl::StrCat("size '", internal::av(text), "': ", why,
                                                   " (e.g. 100000000, 1e8, 100MB, 64MiB)"));
  };
  // The number as mantissa * 10^exponent, exactly: digits, an optional fraction and "e"-part.
  absl::uint128 mantissa = 0;
  int exponent = 0;
  int digits = 0;
  std::size_t i = 0;
  bool point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) break;
    ++digits;
    // Below 10^21 (2^70): room for a binary unit's 2^40 and the checks below.
    if (mantissa >= absl::uint128(10'000'000'000'000'000'000u) * 10) {
      return bad("too many digits");
    }
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    if (point) --exponent;
  }
  if (digits == 0) return bad("not a number");
  if (i + 1 < text.size() && (text[i] == 'e' || text[i] == 'E') &&
      (absl::ascii_isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '+' ||
       text[i + 1] == '-')) {
    ++i;
    const bool negative = text[i] == '-';
    if (text[i] == '+' || text[i] == '-') ++i;
    int power = 0;
    const std::size_t start = i;
    for (; i < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[i])); ++i) {
      if (i - start >= 3) return bad("exponent out of range");
      power = power * 10 + (text[i] - '0');
    }
    if (i == start) return bad("not a number");
    exponent += negative ? -power : power;
  }
  // The unit: K, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti (of 1024), then an optional B.
  std::string unit =
      absl::AsciiStrToLower(absl::StripLeadingAsciiWhitespace(internal::av(text.substr(i))));
  if (absl::EndsWith(unit, "b")) unit.pop_back();
  static constexpr std::string_view kPrefixes = "kmgt";
  if (!unit.empty()) {
    const std::size_t power = kPrefixes.find(unit.front());
    if (power == std::string_view::npos || unit.size() > 2 ||
        (unit.size() == 2 && unit[1] != 'i')) {
      return bad("unknown unit (use K, M, G, T or Ki, Mi, Gi, Ti, with or without B)");
    }
    if (unit.size() == 1) {
      exponent += 3 * static_cast<int>(power + 1);
    } else {
      mantissa <<= 10 * (power + 1);
    }
  }
  constexpr std::uint64_t kMax = ~std::uint64_t{0};
  if (mantissa == 0) return 0;
  for (; exponent < 0; ++exponent) {
    if (mantissa % 10 != 0) return bad("not a whole number of bytes");
    mantissa /= 10;
  }
  for (; exponent > 0 && mantissa <= kMax; --exponent) mantissa *= 10;
  if (mantissa > kMax) return bad("more than 2^64-1 bytes");
  return absl::Uint128Low64(mantissa);
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
  if (t == std::chrono::system_clock::time_point{}) return "-";
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string base_name(const std::string& name) {
  std::string trimmed = name;
  if (!trimmed.empty() && trimmed.back() == '/') trimmed.pop_back();
  const std::size_t slash = trimmed.rfind('/');
  return slash == std::string::npos ? trimmed : trimmed.substr(slash + 1);
}

}  // namespace dataflux::cli
