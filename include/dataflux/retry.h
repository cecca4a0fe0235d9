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

// The defaults fail fast on an endpoint that is wrong or down, yet ride out a blip: with them
// an unreachable endpoint fails within a minute (a first connect attempt of at most
// TransportOptions::connect_timeout, then the deadline) and one that accepts connections but
// stops sending within two (stall_timeout, the deadline, one last stalled attempt), each with
// the last error, the attempts made and the time taken. Progress (a resumed read delivering
// bytes) restarts both budgets, so a long read or save fails only when it stops moving.
// A week-long job that should outlast a regional outage of minutes rather than stop and
// resume from its checkpoint raises `deadline` (e.g. 10 min) and `max_attempts` (e.g. 30); see
// the README's "Time to fail".
struct RetryOptions {
  int max_attempts = 10;                           // attempts without progress, the first included
  std::chrono::milliseconds initial_backoff{100};  // ceiling of the first wait
  std::chrono::milliseconds max_backoff{30'000};   // ceiling of any wait
  double multiplier = 2.0;                         // ceiling growth per attempt
  // How long an operation may keep failing, counted from its first failure since the last
  // progress (time spent queued or moving bytes does not count), attempts and waits included:
  // no attempt starts after it, and an attempt's connect timeout is cut to what is left of it.
  std::chrono::milliseconds deadline{45'000};
};

inline bool operator==(const RetryOptions& a, const RetryOptions& b) {
  return a.max_attempts == b.max_attempts && a.initial_backoff == b.initial_backoff &&
         a.max_backoff == b.max_backoff && a.multiplier == b.multiplier && a.deadline == b.deadline;
}
inline bool operator!=(const RetryOptions& a, const RetryOptions& b) { return !(a == b); }

}  // namespace dataflux

#endif  // DATAFLUX_RETRY_H_
