#include "emulator/fields.h"

#include <cctype>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dataflux::emulator::internal {

struct FieldMask::Cursor {
  static bool is_delimiter(char c) {
    return c == ',' || c == '/' || c == '(' || c == ')' || c == ' ' ||
           std::iscntrl(static_cast<unsigned char>(c));
  }

  std::string_view text;
  std::size_t pos = 0;

  std::string word() {
    const std::size_t start = pos;
    // A name runs to the next delimiter: metadata keys may hold '-' and '.'.
    while (pos < text.size() && !is_delimiter(text[pos])) ++pos;
    return std::string(text.substr(start, pos - start));
  }
  bool eat(char c) {
    if (pos >= text.size() || text[pos] != c) return false;
    ++pos;
    return true;
  }
  void spaces() {
    while (pos < text.size() && text[pos] == ' ') ++pos;
  }
};

// selection := item ("," item)* ; item := name ("/" name)* ["(" selection ")"]
bool FieldMask::parse_into(Cursor& c, FieldMask& into) {
  do {
    c.spaces();
    FieldMask* member = &into;
    do {
      std::string name = c.word();
      if (name.empty()) return false;
      auto [it, fresh] = member->members_.try_emplace(std::move(name));
      if (fresh) it->second.all_ = false;  // nothing of it is selected yet
      member = &it->second;
    } while (c.eat('/'));
    c.spaces();
    if (c.eat('(')) {
      if (!parse_into(c, *member) || !c.eat(')')) return false;
    } else {  // named plainly: all of it
      member->all_ = true;
      member->members_.clear();
    }
    c.spaces();
  } while (c.eat(','));
  return true;
}

absl::StatusOr<FieldMask> FieldMask::parse(std::string_view spec) {
  FieldMask mask;
  if (spec.empty()) return mask;
  mask.all_ = false;
  Cursor c{spec};
  if (!parse_into(c, mask) || c.pos != spec.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Invalid field selection ", std::string(spec)));
  }
  return mask;
}

const FieldMask& FieldMask::inside(std::string_view key) const {
  static const FieldMask everything;
  if (all_) return everything;
  auto it = members_.find(key);
  return it == members_.end() ? everything : it->second;
}

}  // namespace dataflux::emulator::internal
