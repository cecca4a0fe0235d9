#include "dataflux/url.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/absl_view.h"

namespace dataflux {
namespace {

using internal::av;

absl::Status url_error(std::string_view url, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid storage URL '", av(url), "': ", av(what)));
}

bool is_valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    int extra = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      extra = 1;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;
    for (int k = 1; k <= extra; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    // Overlong encodings, surrogates and values past U+10FFFF are not UTF-8.
    if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

absl::StatusOr<std::string> absolute_path(std::string_view url, std::string_view path) {
  if (path.empty()) return url_error(url, "empty path");
  if (path.front() == '/') return std::string(path);
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("cannot resolve relative path '", av(path),
                                                      "': getcwd failed (errno ", errno, ")"));
  }
  std::string base(cwd);
  if (base.back() != '/') base += '/';
  if (path == ".") return base;
  if (absl::StartsWith(av(path), "./")) path.remove_prefix(2);
  return base + std::string(path);
}

// "gs:/b/x", "gs:b", "S3:b": a known scheme without its "//", or any scheme-like word followed
// by ":/" ("http:/h", "c:/data"). A relative local path would silently land somewhere else.
absl::Status mistyped_scheme(std::string_view url) {
  const std::size_t colon = url.find(':');
  if (colon == std::string_view::npos || colon == 0) return absl::OkStatus();
  const std::string_view word = url.substr(0, colon);
  if (!absl::ascii_isalpha(static_cast<unsigned char>(word.front()))) return absl::OkStatus();
  for (char c : word) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return absl::OkStatus();
    }
  }
  const std::string scheme = absl::AsciiStrToLower(av(word));
  std::string_view rest = url.substr(colon + 1);
  // A relative path whose first name has a colon is still reachable, spelled so.
  const std::string way_out = absl::StrCat(" (a local path? write ./", av(url), ")");
  if (scheme == "gs" || scheme == "gcs" || scheme == "s3" || scheme == "file") {
    while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    const std::string meant = absl::StrCat(scheme, scheme == "file" ? ":///" : "://", av(rest));
    return url_error(url, absl::StrCat("did you mean '", meant, "'?", way_out));
  }
  if (absl::StartsWith(av(rest), "/")) {
    return url_error(url, absl::StrCat("'", scheme,
                                       ":' is not a scheme this library reads (gs://, s3://, "
                                       "file:// or a path)",
                                       way_out));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view scheme_name(Scheme scheme) {
  switch (scheme) {
    case Scheme::kGcs:
      return "gs";
    case Scheme::kS3:
      return "s3";
    case Scheme::kFile:
      return "file";
  }
  return "?";
}

absl::Status validate_bucket_name(std::string_view bucket) {
  auto fail = [&](std::string_view rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid bucket name '", av(bucket), "': ", av(rule)));
  };
  if (bucket.empty()) return absl::InvalidArgumentError("missing bucket name");
  if (bucket.size() < 3) return fail("must be at least 3 characters");
  if (bucket.size() > 222) return fail("must be at most 222 characters");
  bool has_dot = bucket.find('.') != std::string_view::npos;
  if (!has_dot && bucket.size() > 63) return fail("must be at most 63 characters without dots");
  for (char c : bucket) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) {
      if (c >= 'A' && c <= 'Z') return fail("must be lowercase");
      return fail(absl::StrCat("character '", std::string(1, c),
                               "' is not allowed (use a-z, 0-9, '-', '_' and '.')"));
    }
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(bucket.front()) || !alnum(bucket.back())) {
    return fail("must start and end with a letter or digit");
  }
  if (bucket.find("..") != std::string_view::npos) return fail("must not contain '..'");
  return absl::OkStatus();
}

absl::Status validate_object_name(std::string_view object) {
  auto shown = object.substr(0, 64);
  auto fail = [&](std::string_view rule) {
    return absl::InvalidArgumentError(absl::StrCat("invalid object name '", av(shown),
                                                   shown.size() < object.size() ? "..." : "",
                                                   "': ", av(rule)));
  };
  if (object.empty()) return absl::InvalidArgumentError("invalid object name: empty");
  if (object.size() > 1024) return fail("longer than 1024 bytes");
  if (!is_valid_utf8(object)) return fail("not valid UTF-8");
  for (char c : object) {
    if (c == '\0' || c == '\r' || c == '\n') return fail("contains NUL, CR or LF");
  }
  if (object == "." || object == "..") return fail("'.' and '..' are not object names");
  return absl::OkStatus();
}

absl::StatusOr<StorageUrl> StorageUrl::parse(std::string_view url) {
  StorageUrl result;
  std::size_t sep = url.find("://");
  if (sep == std::string_view::npos) {
    // A plain path, unless it is a URL with a mistyped scheme.
    if (absl::Status s = mistyped_scheme(url); !s.ok()) return s;
    auto path = absolute_path(url, url);
    if (!path.ok()) return path.status();
    result.scheme = Scheme::kFile;
    result.bucket = "/";
    result.object = path->substr(1);
    return result;
  }
  std::string scheme = absl::AsciiStrToLower(av(url.substr(0, sep)));
  std::string_view rest = url.substr(sep + 3);
  if (scheme == "file") {
    // file:///abs/path or file://localhost/abs/path
    if (absl::StartsWith(av(rest), "localhost/")) rest.remove_prefix(9);
    if (rest.empty() || rest.front() != '/') {
      return url_error(url, "file URLs need an absolute path, as in file:///data/train/");
    }
    result.scheme = Scheme::kFile;
    result.bucket = "/";
    result.object = std::string(rest.substr(1));
    if (result.object.find('\0') != std::string::npos) return url_error(url, "path contains NUL");
    return result;
  }
  if (scheme == "gs" || scheme == "gcs") {
    result.scheme = Scheme::kGcs;
  } else if (scheme == "s3") {
    result.scheme = Scheme::kS3;
  } else {
    return url_error(url, absl::StrCat("unknown scheme '", scheme,
                                       "://' (expected gs://, s3://, file:// or a path)"));
  }
  std::size_t slash = rest.find('/');
  std::string_view bucket = rest.substr(0, slash);
  if (bucket.empty()) {
    return url_error(url,
                     absl::StrCat("missing bucket name (expected ", scheme, "://BUCKET/OBJECT)"));
  }
  if (absl::Status s = validate_bucket_name(bucket); !s.ok())
    return url_error(url, std::string(s.message()));
  if (result.scheme == Scheme::kS3 && bucket.find('_') != std::string_view::npos) {
    return url_error(url, absl::StrCat("invalid bucket name '", av(bucket),
                                       "': S3 bucket names must not contain '_'"));
  }
  result.bucket = std::string(bucket);
  if (slash != std::string_view::npos) {
    std::string_view object = rest.substr(slash + 1);
    if (!object.empty()) {
      if (absl::Status s = validate_object_name(object); !s.ok()) {
        return url_error(url, std::string(s.message()));
      }
    }
    result.object = std::string(object);
  }
  return result;
}

std::string StorageUrl::to_string() const {
  if (scheme == Scheme::kFile) return absl::StrCat("file:///", object);
  return absl::StrCat(scheme_name(scheme) == "gs" ? "gs" : "s3", "://", bucket, "/", object);
}

}  // namespace dataflux
