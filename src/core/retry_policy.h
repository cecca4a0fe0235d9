// Retry policy: exponential backoff with full jitter, an attempt cap and a deadline.
//
// RetryState decides, after each failure, whether and how long to wait; RetryLoop runs a
// blocking operation under it. Time comes from a Clock so tests use a fake one.
//
//   internal::RetryState retry(options.retry, internal::Idempotency::kIdempotent);
//   auto result = internal::retry_loop<Metadata>(retry, internal::Clock::real(),
//                                               [&](int attempt) { return DoRequest(); });
#ifndef DATAFLUX_SRC_CORE_RETRY_POLICY_H_
#define DATAFLUX_SRC_CORE_RETRY_POLICY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "dataflux/retry.h"

namespace dataflux::internal {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time now() = 0;
  virtual void sleep_for(absl::Duration d) = 0;
  static Clock& real();  // absl::now / absl::sleep_for
};

enum class Idempotency { kIdempotent, kNonIdempotent };

class RetryState {
 public:
  // The deadline starts counting now (by `clock`).
  RetryState(const RetryOptions& options, Idempotency idempotency, Clock& clock = Clock::real(),
             std::uint64_t seed = 0 /* 0 = random */);

  // After a failed attempt: the wait before the next attempt, or nullopt when `error` is
  // permanent, the operation is not idempotent, or the attempts or deadline are spent.
  std::optional<absl::Duration> on_failure(const absl::Status& error);

  // The operation moved forward since its last failure (a resumed read delivered bytes): it
  // has not failed, so the attempt count, the backoff and the deadline start over, as
  // google-cloud-cpp's resumed reads do (a fresh retry policy per failure after progress). A
  // long read thus fails only when it stops moving, not because it is long.
  void on_progress();
  // What is left of the deadline (never negative): the most an attempt may spend connecting.
  absl::Duration remaining() const;

  int attempts() const { return attempts_; }  // failed attempts since the last progress
  // The error to return when giving up: the last error, its message suffixed, when more than
  // one attempt was made, with " (after N attempts, T without progress; retry limits: M
  // attempts, D)" so that the message says what was tried and for how long.
  absl::Status final_error(const absl::Status& last) const;
  Clock& clock() { return clock_; }

 private:
  RetryOptions options_;
  Idempotency idempotency_;
  Clock& clock_;
  absl::Time started_;  // of the current stretch without progress
  absl::Time deadline_;
  int attempts_ = 0;
  int failures_ = 0;  // every failure, for the final message
  std::mt19937_64 rng_;
};

// Runs `op(attempt)` (attempt counts from 1) until it succeeds or the state gives up, sleeping
// on the state's clock between attempts.
template <typename T>
absl::StatusOr<T> retry_loop(RetryState& state, const std::function<absl::StatusOr<T>(int)>& op) {
  for (int attempt = 1;; ++attempt) {
    absl::StatusOr<T> result = op(attempt);
    if (result.ok()) return result;
    auto delay = state.on_failure(result.status());
    if (!delay) return state.final_error(result.status());
    state.clock().sleep_for(*delay);
  }
}

absl::Status retry_loop_status(RetryState& state, const std::function<absl::Status(int)>& op);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_RETRY_POLICY_H_
