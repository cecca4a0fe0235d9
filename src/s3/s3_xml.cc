#include "s3/s3_xml.h"

#include <expat.h>

#include <memory>

#include "absl/strings/str_cat.h"

namespace dataflux::internal {
namespace {

constexpr std::size_t kMaxDepth = 32;
constexpr std::size_t kMaxDocument = 64u << 20;

struct Builder {
  XmlElement root;
  std::vector<XmlElement*> stack;
  bool have_root = false;
  bool too_deep = false;
  XML_Parser parser = nullptr;
};

void on_start(void* data, const XML_Char* name, const XML_Char** /*attributes*/) {
  auto* b = static_cast<Builder*>(data);
  if (b->stack.size() >= kMaxDepth) {
    b->too_deep = true;
    XML_StopParser(b->parser, XML_FALSE);
    return;
  }
  XmlElement* element = nullptr;
  if (b->stack.empty()) {
    b->have_root = true;
    element = &b->root;
  } else {
    b->stack.back()->children.emplace_back();
    element = &b->stack.back()->children.back();
  }
  element->name = name;
  b->stack.push_back(element);
}

void on_end(void* data, const XML_Char* /*name*/) {
  auto* b = static_cast<Builder*>(data);
  if (!b->stack.empty()) b->stack.pop_back();
}

void on_text(void* data, const XML_Char* text, int size) {
  auto* b = static_cast<Builder*>(data);
  if (!b->stack.empty()) b->stack.back()->text.append(text, static_cast<std::size_t>(size));
}

}  // namespace

const XmlElement* XmlElement::child(std::string_view wanted) const {
  for (const auto& c : children) {
    if (c.name == wanted) return &c;
  }
  return nullptr;
}

std::vector<const XmlElement*> XmlElement::children_named(std::string_view wanted) const {
  std::vector<const XmlElement*> out;
  for (const auto& c : children) {
    if (c.name == wanted) out.push_back(&c);
  }
  return out;
}

std::string XmlElement::child_text(std::string_view wanted) const {
  const XmlElement* c = child(wanted);
  return c ? c->text : std::string();
}

absl::StatusOr<XmlElement> parse_xml(std::string_view document) {
  if (document.size() > kMaxDocument) {
    return absl::InvalidArgumentError(
        absl::StrCat("XML document too large (", document.size(), " bytes)"));
  }
  std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(XML_ParserCreate("UTF-8"),
                                                                      &XML_ParserFree);
  if (!parser) return absl::ResourceExhaustedError("cannot create an XML parser");
  Builder builder;
  builder.parser = parser.get();
  XML_SetUserData(parser.get(), &builder);
  XML_SetElementHandler(parser.get(), &on_start, &on_end);
  XML_SetCharacterDataHandler(parser.get(), &on_text);
  if (XML_Parse(parser.get(), document.data(), static_cast<int>(document.size()), XML_TRUE) !=
          XML_STATUS_OK ||
      builder.too_deep) {
    if (builder.too_deep) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed XML: nested deeper than ", kMaxDepth, " elements"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("malformed XML: ", XML_ErrorString(XML_GetErrorCode(parser.get())),
                     " at line ", XML_GetCurrentLineNumber(parser.get())));
  }
  if (!builder.have_root) return absl::InvalidArgumentError("malformed XML: no root element");
  return std::move(builder.root);
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

}  // namespace dataflux::internal
