// RetryOptions: how storage operations retry transient failures.
//
// Retries use exponential backoff with full jitter (each wait is uniform in
// [0, min(max_backoff, initial_backoff * multiplier^n)]) and stop at max_attempts or the
// deadline, whichever comes first. Only transient errors are retried (HTTP 408, 429, 5xx,
// connection resets, stalls), and only for operations that are idempotent or made so by a
// generation precondition. Interrupted reads resume from the last byte received.
//
//   dataflux::RetryOptions retry;
//   retry.max_attempts = 5;
//   retry.deadline = std::chrono::seconds(60);
#ifndef DATAFLUX_RETRY_H_
#define DATAFLUX_RETRY_H_

#include <chrono>

namespace dataflux {

struct RetryOptions {
  int max_attempts = 10;                           // attempts per operation, the first included
  std::chrono::milliseconds initial_backoff{100};  // ceiling of the first wait
  std::chrono::milliseconds max_backoff{30'000};   // ceiling of any wait
  double multiplier = 2.0;                         // ceiling growth per attempt
  std::chrono::milliseconds deadline{600'000};     // total time per operation, waits included
};

inline bool operator==(const RetryOptions& a, const RetryOptions& b) {
  return a.max_attempts == b.max_attempts && a.initial_backoff == b.initial_backoff &&
         a.max_backoff == b.max_backoff && a.multiplier == b.multiplier && a.deadline == b.deadline;
}
inline bool operator!=(const RetryOptions& a, const RetryOptions& b) { return !(a == b); }

}  // namespace dataflux

#endif  // DATAFLUX_RETRY_H_
