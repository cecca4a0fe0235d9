// GCS's `fields` parameter (partial responses): "nextPageToken,prefixes,items(name,size)", or
// with paths, "items/name". The emulator honours it as GCS does, so a client that asks for
// less gets less to parse, and the cloud model charges a listing what GCS would.
//
//   auto mask = FieldMask::parse(req.get_param_value("fields"));   // "" keeps everything
//   if (mask->keeps("selfLink")) ...;  write_items(mask->inside("items"));
#ifndef DATAFLUX_SRC_EMULATOR_FIELDS_H_
#define DATAFLUX_SRC_EMULATOR_FIELDS_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace dataflux::emulator::internal {

class FieldMask {
 public:
  FieldMask() = default;  // keeps everything

  // InvalidArgument naming the selector when it does not parse (GCS answers 400).
  static absl::StatusOr<FieldMask> parse(std::string_view spec);

  // Whether member `key` appears in the reply (whole, or the part of it `inside` selects).
  bool keeps(std::string_view key) const { return all_ || members_.count(key) > 0; }
  // The selection within member `key`: everything when the member was named plainly (and
  // for a member not selected at all: ask keeps() first).
  const FieldMask& inside(std::string_view key) const;

 private:
  struct Cursor;
  // Adds the selection at `c` to `into`, a member selected in part.
  static bool parse_into(Cursor& c, FieldMask& into);

  bool all_ = true;
  std::map<std::string, FieldMask, std::less<>> members_;
};

}  // namespace dataflux::emulator::internal

#endif  // DATAFLUX_SRC_EMULATOR_FIELDS_H_
