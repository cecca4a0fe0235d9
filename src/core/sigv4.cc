#include "core/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/absl_view.h"
#include "core/percent.h"

namespace dataflux::internal {
namespace {

std::string digest(const EVP_MD* md, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), out, &size, md, nullptr);
  return std::string(reinterpret_cast<const char*>(out), size);
}

// Trims and collapses runs of spaces, as the canonical header value wants.
std::string canonical_header_value(std::string_view value) {
  std::string out;
  bool space = false;
  for (char c : absl::StripAsciiWhitespace(av(value))) {
    if (c == ' ' || c == '\t') {
      space = true;
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string hex_lower(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) { return hex_lower(digest(EVP_sha256(), data)); }

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &size);
  return std::string(reinterpret_cast<const char*>(out), size);
}

std::string md5_base64_of(std::string_view data) {
  return absl::Base64Escape(digest(EVP_md5(), data));
}
std::string md5_hex_of(std::string_view data) { return hex_lower(digest(EVP_md5(), data)); }

std::string canonical_query_string(std::vector<std::pair<std::string, std::string>> query) {
  for (auto& [name, value] : query) {
    name = percent_encode(name, false);
    value = percent_encode(value, false);
  }
  std::sort(query.begin(), query.end());
  return absl::StrJoin(query, "&", [](std::string* out, const auto& p) {
    absl::StrAppend(out, p.first, "=", p.second);
  });
}

std::string canonical_request(const SigV4Request& request, std::string* signed_headers) {
  std::map<std::string, std::string> headers;  // sorted by lowercase name
  for (const auto& [name, value] : request.headers) {
    std::string key = absl::AsciiStrToLower(av(name));
    auto [it, inserted] = headers.emplace(key, canonical_header_value(value));
    if (!inserted) absl::StrAppend(&it->second, ",", canonical_header_value(value));
  }
  std::string canonical_headers;
  std::vector<std::string> names;
  for (const auto& [name, value] : headers) {
    absl::StrAppend(&canonical_headers, name, ":", value, "\n");
    names.push_back(name);
  }
  std::string joined = absl::StrJoin(names, ";");
  std::string out = absl::StrCat(request.method, "\n",
                                 request.canonical_uri.empty() ? "/" : request.canonical_uri, "\n",
                                 canonical_query_string(request.query), "\n", canonical_headers,
                                 "\n", joined, "\n", request.payload_hash);
  if (signed_headers != nullptr) *signed_headers = std::move(joined);
  return out;
}

std::string credential_scope(std::string_view date, std::string_view region,
                             std::string_view service) {
  return absl::StrCat(av(date), "/", av(region), "/", av(service), "/aws4_request");
}

std::string string_to_sign(std::string_view amz_date, std::string_view scope,
                           std::string_view canonical_request) {
  return absl::StrCat(kSigV4Algorithm, "\n", av(amz_date), "\n", av(scope), "\n",
                      sha256_hex(canonical_request));
}

std::string sigv4_signature(std::string_view secret, std::string_view date, std::string_view region,
                            std::string_view service, std::string_view to_sign) {
  std::string key = hmac_sha256(absl::StrCat("AWS4", av(secret)), date);
  key = hmac_sha256(key, region);
  key = hmac_sha256(key, service);
  key = hmac_sha256(key, "aws4_request");
  return hex_lower(hmac_sha256(key, to_sign));
}

std::optional<SigV4Authorization> parse_sigv4_authorization(std::string_view header) {
  absl::string_view rest = absl::StripAsciiWhitespace(av(header));
  if (!absl::ConsumePrefix(&rest, kSigV4Algorithm)) return std::nullopt;
  SigV4Authorization out;
  bool have_credential = false;
  bool have_signed = false;
  for (absl::string_view field : absl::StrSplit(rest, ',')) {
    field = absl::StripAsciiWhitespace(field);
    if (absl::ConsumePrefix(&field, "Credential=")) {
      std::vector<std::string> parts = absl::StrSplit(field, '/');
      if (parts.size() != 5 || parts[4] != "aws4_request") return std::nullopt;
      out.access_key_id = parts[0];
      out.date = parts[1];
      out.region = parts[2];
      out.service = parts[3];
      have_credential = true;
    } else if (absl::ConsumePrefix(&field, "SignedHeaders=")) {
      out.signed_headers = absl::StrSplit(field, ';');
      have_signed = true;
    } else if (absl::ConsumePrefix(&field, "Signature=")) {
      out.signature = std::string(field);
    }
  }
  if (!have_credential || !have_signed || out.signature.empty()) return std::nullopt;
  return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace dataflux::internal
