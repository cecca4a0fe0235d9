// A small element tree over expat, for the S3 XML documents (listings, errors, multipart
// results) the client reads and the emulator's request bodies. Namespaces are not expanded:
// S3 documents use one default namespace, so local names are unambiguous.
//
//   auto doc = parse_xml(body);
//   if (!doc.ok()) return doc.status();
//   for (const XmlElement* c : doc->children_named("Contents")) use(c->child_text("Key"));
#ifndef DATAFLUX_SRC_S3_S3_XML_H_
#define DATAFLUX_SRC_S3_S3_XML_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace dataflux::internal {

struct XmlElement {
  std::string name;
  std::string text;  // character data directly inside this element, unescaped
  std::vector<XmlElement> children;

  const XmlElement* child(std::string_view name) const;  // the first, or nullptr
  std::vector<const XmlElement*> children_named(std::string_view name) const;
  // The text of the first child named `name`, or "" when there is none.
  std::string child_text(std::string_view name) const;
};

// The root element. InvalidArgument (with expat's message and line) for malformed XML,
// documents nested deeper than 32 levels, or more than 64 MiB.
absl::StatusOr<XmlElement> parse_xml(std::string_view document);

// Escapes & < > " ' for text and attribute values.
std::string xml_escape(std::string_view text);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_S3_S3_XML_H_
