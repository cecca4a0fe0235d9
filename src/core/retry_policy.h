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

// While one is alive on a thread, every operation started there, or in a pool task started
// there (ThreadPool::run carries it over), ends by the scope's deadline: its retries stop, its
// requests time out, and an operation begun after it fails at once without a request.
// Destructors that clean up over the network (aborting an upload, deleting parts) run under
// one, so they never block for long while the network is down; what they leave is `cleanup`'s.
class RetryBudgetScope {
 public:
  explicit RetryBudgetScope(absl::Duration budget);
  // Re-establishes an absolute deadline (the pool's carry-over); InfiniteFuture = none.
  explicit RetryBudgetScope(absl::Time until);
  ~RetryBudgetScope();
  RetryBudgetScope(const RetryBudgetScope&) = delete;
  RetryBudgetScope& operator=(const RetryBudgetScope&) = delete;
  // The innermost scope's deadline on this thread; InfiniteFuture when none.
  static absl::Time current();

 private:
  absl::Time previous_;
};

// How long a destructor may spend cleaning up over the network (documented in the README).
absl::Duration destructor_budget();
void set_destructor_budget_for_testing(absl::Duration budget);

class RetryState {
 public:
  // The deadline starts counting at the first failure (by `clock`), not here: time a request
  // spent queued behind others, or moving bytes, is not time spent failing.
  RetryState(const RetryOptions& options, Idempotency idempotency, Clock& clock = Clock::real(),
             std::uint64_t seed = 0 /* 0 = random */);

  // After a failed attempt: the wait before the next attempt, or nullopt when `error` is
  // permanent, the operation is not idempotent, or the attempts or deadline are spent.
  std::optional<absl::Duration> on_failure(const absl::Status& error);

  // The operation moved forward since its last failure (a resumed read delivered bytes): it
  // has not failed, so the attempt count, the backoff and the deadline start over (the deadline
  // counting again from the next failure), as
  // google-cloud-cpp's resumed reads do (a fresh retry policy per failure after progress). A
  // long read thus fails only when it stops moving, not because it is long.
  void on_progress();
  // What is left of the deadline (never negative; all of it before a failure): the most an
  // attempt may spend connecting.
  absl::Duration remaining() const;
  // Under a RetryBudgetScope: each attempt must end by the deadline (a whole-request timeout),
  // and none starts once it has passed.
  bool bounded() const { return bounded_; }

  int attempts() const { return attempts_; }  // failed attempts since the last progress
  // The error to return when giving up: the last error, its message suffixed, when more than
  // one attempt was made, with " (after N attempts, failing for T; retry limits: M attempts,
  // D)" so that the message says what was tried and for how long.
  absl::Status final_error(const absl::Status& last) const;
  Clock& clock() { return clock_; }

 private:
  RetryOptions options_;
  Idempotency idempotency_;
  Clock& clock_;
  std::optional<absl::Time> failing_since_;  // the first failure since the last progress
  absl::Time deadline() const;
  absl::Time budget_end_ = absl::InfiniteFuture();  // the RetryBudgetScope's, when bounded_
  bool bounded_ = false;
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
