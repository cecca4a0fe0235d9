#include "core/retry_policy.h"

#include <vector>

#include <gtest/gtest.h>

#include "core/http_status.h"

namespace dataflux::internal {
namespace {

class FakeClock : public Clock {
 public:
  absl::Time now() override { return now_; }
  void sleep_for(absl::Duration d) override {
    sleeps.push_back(d);
    now_ += d;
  }
  void advance(absl::Duration d) { now_ += d; }
  std::vector<absl::Duration> sleeps;

 private:
  absl::Time now_ = absl::UnixEpoch();
};

RetryOptions fast_options() {
  RetryOptions o;
  o.max_attempts = 5;
  o.initial_backoff = std::chrono::milliseconds(100);
  o.max_backoff = std::chrono::milliseconds(1000);
  o.multiplier = 2.0;
  o.deadline = std::chrono::milliseconds(60'000);
  return o;
}

TEST(RetryPolicy, RetriesTransientErrorsUntilSuccess) {
  FakeClock clock;
  RetryState state(fast_options(), Idempotency::kIdempotent, clock, 1);
  int calls = 0;
  auto result = retry_loop<int>(state, [&](int attempt) -> absl::StatusOr<int> {
    ++calls;
    EXPECT_EQ(attempt, calls);
    if (calls < 3) return absl::UnavailableError("503");
    return 42;
  });
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, 42);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(clock.sleeps.size(), 2u);
}

TEST(RetryPolicy, FullJitterStaysUnderTheGrowingCeiling) {
  FakeClock clock;
  RetryState state(fast_options(), Idempotency::kIdempotent, clock, 7);
  // Ceilings: 100, 200, 400, 800 ms (then the attempt cap).
  const double ceilings[] = {100, 200, 400, 800};
  for (double ceiling : ceilings) {
    auto delay = state.on_failure(absl::UnavailableError("x"));
    ASSERT_TRUE(delay.has_value());
    EXPECT_GE(*delay, absl::ZeroDuration());
    EXPECT_LE(*delay, absl::Milliseconds(ceiling));
  }
  EXPECT_FALSE(state.on_failure(absl::UnavailableError("x")).has_value());  // 5 attempts
  EXPECT_EQ(state.attempts(), 5);
}

// A resumed read that delivered bytes has not failed: the count and the backoff start over,
// while the deadline keeps bounding the whole operation.
TEST(RetryPolicy, ProgressRestartsTheAttemptsAndTheDeadline) {
  FakeClock clock;
  RetryState state(fast_options(), Idempotency::kIdempotent, clock, 3);
  for (int round = 0; round < 20; ++round) {  // 20 failures, far past max_attempts = 5
    auto delay = state.on_failure(absl::UnavailableError("stream broke"));
    ASSERT_TRUE(delay.has_value()) << round;
    EXPECT_LE(*delay, absl::Milliseconds(100)) << "the backoff restarts from its first ceiling";
    state.on_progress();
  }
  EXPECT_EQ(state.final_error(absl::UnavailableError("x")).message(),
            "x (after 20 attempts, failing for 0; retry limits: 5 attempts, 1m)");
  // Without progress the cap applies again.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(state.on_failure(absl::UnavailableError("x")));
  EXPECT_FALSE(state.on_failure(absl::UnavailableError("x")).has_value());
  // A read that was queued or moving bytes for longer than the deadline is not failed by its
  // first blip: the deadline counts from the first failure...
  RetryState long_read(fast_options(), Idempotency::kIdempotent, clock, 4);
  clock.advance(absl::Seconds(61));
  EXPECT_EQ(long_read.remaining(), absl::Seconds(60));
  EXPECT_TRUE(long_read.on_failure(absl::UnavailableError("x")).has_value());
  clock.advance(absl::Seconds(20));
  EXPECT_EQ(long_read.remaining(), absl::Seconds(40));
  // ...progress starts it over...
  long_read.on_progress();
  clock.advance(absl::Seconds(61));
  EXPECT_TRUE(long_read.on_failure(absl::UnavailableError("x")).has_value());
  // ...and one that keeps failing without progress stops once the deadline has passed.
  clock.advance(absl::Seconds(61));
  EXPECT_FALSE(long_read.on_failure(absl::UnavailableError("x")).has_value());
}

TEST(RetryPolicy, JitterIsSpreadNotConstant) {
  RetryOptions o = fast_options();
  o.max_attempts = 1000;
  o.max_backoff = std::chrono::milliseconds(100);
  FakeClock clock;
  RetryState state(o, Idempotency::kIdempotent, clock, 3);
  absl::Duration lo = absl::InfiniteDuration(), hi = absl::ZeroDuration();
  for (int i = 0; i < 200; ++i) {
    auto d = state.on_failure(absl::UnavailableError("x"));
    ASSERT_TRUE(d.has_value());
    lo = std::min(lo, *d);
    hi = std::max(hi, *d);
  }
  EXPECT_LT(lo, absl::Milliseconds(20));
  EXPECT_GT(hi, absl::Milliseconds(80));
}

TEST(RetryPolicy, PermanentErrorsAndNonIdempotentOperationsAreNotRetried) {
  FakeClock clock;
  RetryState permanent(fast_options(), Idempotency::kIdempotent, clock);
  EXPECT_FALSE(permanent.on_failure(absl::NotFoundError("404")).has_value());
  EXPECT_FALSE(permanent.on_failure(absl::FailedPreconditionError("412")).has_value());
  RetryState unsafe(fast_options(), Idempotency::kNonIdempotent, clock);
  EXPECT_FALSE(unsafe.on_failure(absl::UnavailableError("503")).has_value());
}

TEST(RetryPolicy, DeadlineStopsRetries) {
  RetryOptions o = fast_options();
  o.max_attempts = 100;
  o.deadline = std::chrono::milliseconds(500);
  FakeClock clock;
  RetryState state(o, Idempotency::kIdempotent, clock, 5);
  EXPECT_TRUE(state.on_failure(absl::UnavailableError("x")).has_value());
  clock.advance(absl::Milliseconds(600));
  EXPECT_FALSE(state.on_failure(absl::UnavailableError("x")).has_value());
}

TEST(RetryPolicy, FinalErrorKeepsCodeAndCountsAttempts) {
  FakeClock clock;
  RetryState state(fast_options(), Idempotency::kIdempotent, clock, 1);
  auto result = retry_loop<int>(state, [](int) -> absl::StatusOr<int> {
    return absl::UnavailableError("GET gs://b/o: HTTP 503");
  });
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(result.status().message(),
            absl::StrCat("GET gs://b/o: HTTP 503 (after 5 attempts, failing for ",
                         absl::FormatDuration(
                             absl::Trunc(clock.now() - absl::UnixEpoch(), absl::Milliseconds(100))),
                         "; retry limits: 5 attempts, 1m)"));
}

TEST(HttpStatus, MapsCodesAndNamesContext) {
  EXPECT_EQ(status_code_from_http(200), absl::StatusCode::kOk);
  EXPECT_EQ(status_code_from_http(308), absl::StatusCode::kOk);
  EXPECT_EQ(status_code_from_http(404), absl::StatusCode::kNotFound);
  EXPECT_EQ(status_code_from_http(403), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(status_code_from_http(412), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status_code_from_http(429), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status_code_from_http(408), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status_code_from_http(503), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status_code_from_http(500), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status_code_from_http(416), absl::StatusCode::kOutOfRange);
  auto s = status_from_http(404, "GET gs://b/o", "No such object: b/o");
  EXPECT_EQ(s.message(), "GET gs://b/o: HTTP 404 Not Found: No such object: b/o");
  EXPECT_TRUE(is_transient(status_from_http(503, "x", "")));
  EXPECT_TRUE(is_transient(status_from_http(429, "x", "")));
  EXPECT_TRUE(is_transient(status_from_http(408, "x", "")));
  EXPECT_FALSE(is_transient(status_from_http(404, "x", "")));
  EXPECT_TRUE(status_from_http(200, "x", "").ok());
  std::string huge(5000, 'm');
  EXPECT_LT(status_from_http(500, "x", huge).message().size(), 600u);
}

}  // namespace
}  // namespace dataflux::internal
