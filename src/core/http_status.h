// Maps HTTP outcomes to absl::Status, the one vocabulary of errors in the core.
#ifndef DATAFLUX_SRC_CORE_HTTP_STATUS_H_
#define DATAFLUX_SRC_CORE_HTTP_STATUS_H_

#include <string_view>

#include "absl/status/status.h"

namespace dataflux::internal {

// 400 InvalidArgument, 401 Unauthenticated, 403 PermissionDenied, 404 NotFound,
// 408 DeadlineExceeded, 409 Aborted, 412 FailedPrecondition, 413 InvalidArgument,
// 416 OutOfRange, 429 ResourceExhausted, 499 Cancelled, 501 Unimplemented, other 5xx
// Unavailable, other 4xx FailedPrecondition, 2xx/3xx OK.
absl::StatusCode status_code_from_http(long http_status);

// "<context>: HTTP 404 Not Found: <server_message>", e.g. context "GET gs://b/o". The
// server message is shortened to a few hundred bytes.
absl::Status status_from_http(long http_status, std::string_view context,
                              std::string_view server_message);

// True for errors worth retrying: Unavailable, ResourceExhausted, DeadlineExceeded (408,
// 429, 5xx, resets, stalls). Retry decisions also need the operation to be idempotent.
bool is_transient(const absl::Status& status);

// Prefixes a status message with context, keeping the code: "<context>: <message>".
absl::Status annotate(const absl::Status& status, std::string_view context);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_HTTP_STATUS_H_
