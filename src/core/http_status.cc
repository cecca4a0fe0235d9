#include "core/http_status.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/absl_view.h"

namespace dataflux::internal {
namespace {

std::string_view reason_phrase(long code) {
  switch (code) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Payload Too Large";
    case 416:
      return "Range Not Satisfiable";
    case 429:
      return "Too Many Requests";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

constexpr std::size_t kMaxServerMessage = 400;

}  // namespace

absl::StatusCode status_code_from_http(long http_status) {
  if (http_status >= 200 && http_status < 400) return absl::StatusCode::kOk;
  switch (http_status) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 408:
      return absl::StatusCode::kDeadlineExceeded;
    case 409:
      return absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kNotFound;
    case 412:
      return absl::StatusCode::kFailedPrecondition;
    case 413:
      return absl::StatusCode::kInvalidArgument;
    case 416:
      return absl::StatusCode::kOutOfRange;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 499:
      return absl::StatusCode::kCancelled;
    case 501:
      return absl::StatusCode::kUnimplemented;
    default:
      break;
  }
  if (http_status >= 500 && http_status < 600) return absl::StatusCode::kUnavailable;
  if (http_status >= 400 && http_status < 500) return absl::StatusCode::kFailedPrecondition;
  return absl::StatusCode::kUnknown;  // 1xx or nonsense: a protocol violation
}

absl::Status status_from_http(long http_status, std::string_view context,
                              std::string_view server_message) {
  absl::StatusCode code = status_code_from_http(http_status);
  if (code == absl::StatusCode::kOk) return absl::OkStatus();
  std::string message = absl::StrCat(av(context), ": HTTP ", http_status);
  std::string_view phrase = reason_phrase(http_status);
  if (!phrase.empty()) absl::StrAppend(&message, " ", av(phrase));
  if (!server_message.empty()) {
    std::string_view shown = server_message.substr(0, kMaxServerMessage);
    absl::StrAppend(&message, ": ", av(shown), shown.size() < server_message.size() ? "..." : "");
  }
  return absl::Status(code, message);
}

bool is_transient(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kDeadlineExceeded:
      return true;
    default:
      return false;
  }
}

absl::Status annotate(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(av(context), ": ", status.message()));
}

}  // namespace dataflux::internal
