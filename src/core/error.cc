#include "dataflux/error.h"

#include <string>

namespace dataflux {
namespace {

std::string describe(const absl::Status& status) {
  return std::string(status.ToString(absl::StatusToStringMode::kWithNoExtraData));
}

}  // namespace

Error::Error(absl::Status status)
    : std::runtime_error(describe(status)), status_(std::move(status)) {
  if (status_.ok()) {
    status_ = absl::UnknownError("dataflux::Error constructed from an OK status");
  }
}

void throw_if_error(const absl::Status& status) {
  if (!status.ok()) throw Error(status);
}

}  // namespace dataflux
