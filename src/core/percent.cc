#include "core/percent.h"

namespace dataflux::internal {

std::string percent_encode(std::string_view in, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(in.size());
  for (char c : in) {
    const auto u = static_cast<unsigned char>(c);
    const bool unreserved = (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') ||
                            (u >= '0' && u <= '9') || u == '-' || u == '.' || u == '_' ||
                            u == '~' || (keep_slash && u == '/');
    if (unreserved) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    }
  }
  return out;
}

std::string printable(std::string_view in) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(in.size());
  for (char c : in) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string display_url(std::string_view scheme, std::string_view bucket, std::string_view object) {
  // A local root "/data/" and the root "/" itself: no doubled slash before the object.
  while (bucket.size() > 1 && bucket.back() == '/') bucket.remove_suffix(1);
  std::string out = std::string(scheme) + "://" + printable(bucket);
  if (object.empty()) return out;
  if (out.back() != '/') out.push_back('/');
  return out + printable(object);
}

}  // namespace dataflux::internal
