#include "s3/s3_list.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/absl_view.h"
#include "core/http_status.h"
#include "s3/s3_xml.h"

namespace dataflux::internal {
namespace {

constexpr int kMaxKeys = 1000;
constexpr char kMaxCodePoint[] = "\xf4\x8f\xbf\xbf";  // U+10FFFF, the largest UTF-8 sequence

}  // namespace

std::string start_after_for(std::string_view start) {
  if (start.empty()) return std::string();
  std::string s(start);
  const unsigned char last = static_cast<unsigned char>(s.back());
  if (last > 0x01 && last < 0x80) {
    // The largest name below `start` is (start minus one in its last byte) followed by the
    // largest characters; four U+10FFFF come close enough, and the filter drops the rest.
    s.back() = static_cast<char>(last - 1);
    for (int i = 0; i < 4; ++i) s += kMaxCodePoint;
    return s;
  }
  // Drop the last UTF-8 character: every name >= start is > what remains.
  do {
    s.pop_back();
  } while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xc0) == 0x80);
  if (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xc0) s.pop_back();
  return s;
}

std::vector<std::pair<std::string, std::string>> list_query(const ListObjectsRequest& request) {
  std::vector<std::pair<std::string, std::string>> q = {{"list-type", "2"}};
  if (!request.prefix.empty()) q.emplace_back("prefix", request.prefix);
  if (!request.delimiter.empty()) q.emplace_back("delimiter", request.delimiter);
  int max_keys = request.max_results <= 0 ? kMaxKeys : std::min(request.max_results, kMaxKeys);
  q.emplace_back("max-keys", absl::StrCat(max_keys));
  if (!request.page_token.empty()) q.emplace_back("continuation-token", request.page_token);
  std::string start_after = start_after_for(request.start_offset);
  if (!start_after.empty()) q.emplace_back("start-after", start_after);
  return q;
}

std::string md5_base64_from_etag(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  if (etag.size() != 32) return std::string();
  for (char c : etag) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return std::string();
  }
  std::string bytes = absl::HexStringToBytes(av(etag));
  return absl::Base64Escape(bytes);
}

std::chrono::system_clock::time_point parse_s3_time(std::string_view text) {
  absl::Time t;
  std::string err;
  const std::string s(text);
  if (absl::ParseTime("%Y-%m-%dT%H:%M:%E*SZ", s, &t, &err) ||
      absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", s, &t, &err)) {
    return absl::ToChronoTime(t);
  }
  return {};
}

absl::StatusOr<ListObjectsPage> parse_list_page(std::string_view body,
                                                const ListObjectsRequest& request,
                                                std::string_view context) {
  auto doc = parse_xml(body);
  if (!doc.ok()) return annotate(doc.status(), context);
  if (doc->name != "ListBucketResult") {
    return absl::InternalError(
        absl::StrCat(std::string(context), ": expected ListBucketResult, got <", doc->name, ">"));
  }
  ListObjectsPage page;
  bool past_end = false;
  auto in_range = [&](const std::string& name) {
    if (name < request.start_offset) return false;
    if (!request.end_offset.empty() && name >= request.end_offset) {
      past_end = true;
      return false;
    }
    return true;
  };
  for (const XmlElement* c : doc->children_named("Contents")) {
    ObjectMetadata meta;
    meta.bucket = request.bucket;
    meta.name = c->child_text("Key");
    if (!in_range(meta.name)) continue;
    std::uint64_t size = 0;
    if (!absl::SimpleAtoi(c->child_text("Size"), &size)) {
      return absl::InternalError(absl::StrCat(std::string(context), ": bad <Size> for ", meta.name,
                                              ": \"", c->child_text("Size"), "\""));
    }
    meta.size = size;
    meta.md5_hash = md5_base64_from_etag(c->child_text("ETag"));
    meta.storage_class = c->child_text("StorageClass");
    meta.updated = parse_s3_time(c->child_text("LastModified"));
    page.objects.push_back(std::move(meta));
  }
  for (const XmlElement* p : doc->children_named("CommonPrefixes")) {
    std::string prefix = p->child_text("Prefix");
    // A rolled-up prefix below start_offset may still hold names >= it.
    if (!request.end_offset.empty() && prefix >= request.end_offset) {
      past_end = true;
      continue;
    }
    if (prefix < request.start_offset && request.start_offset.rfind(prefix, 0) != 0) continue;
    page.prefixes.push_back(std::move(prefix));
  }
  std::sort(page.objects.begin(), page.objects.end(),
            [](const ObjectMetadata& a, const ObjectMetadata& b) { return a.name < b.name; });
  if (doc->child_text("IsTruncated") == "true" && !past_end) {
    page.next_page_token = doc->child_text("NextContinuationToken");
    if (page.next_page_token.empty()) {
      return absl::InternalError(absl::StrCat(
          std::string(context), ": a truncated listing without NextContinuationToken"));
    }
  }
  return page;
}

}  // namespace dataflux::internal
