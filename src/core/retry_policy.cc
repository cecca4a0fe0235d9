#include "core/retry_policy.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/http_status.h"
#include "core/log.h"

namespace dataflux::internal {
namespace {

class RealClock : public Clock {
 public:
  absl::Time now() override { return absl::Now(); }
  void sleep_for(absl::Duration d) override { absl::SleepFor(d); }
};

absl::Duration to_absl(std::chrono::milliseconds ms) { return absl::Milliseconds(ms.count()); }

thread_local absl::Time t_budget_end = absl::InfiniteFuture();
std::atomic<std::int64_t> g_destructor_budget_ms{10'000};

}  // namespace

RetryBudgetScope::RetryBudgetScope(absl::Duration budget)
    : RetryBudgetScope(absl::Now() + budget) {}

RetryBudgetScope::RetryBudgetScope(absl::Time until) : previous_(t_budget_end) {
  t_budget_end = std::min(previous_, until);
}

RetryBudgetScope::~RetryBudgetScope() { t_budget_end = previous_; }

absl::Time RetryBudgetScope::current() { return t_budget_end; }

absl::Duration destructor_budget() { return absl::Milliseconds(g_destructor_budget_ms.load()); }

void set_destructor_budget_for_testing(absl::Duration budget) {
  g_destructor_budget_ms = absl::ToInt64Milliseconds(budget);
}

Clock& Clock::real() {
  static RealClock* clock = new RealClock();  // never destroyed: used from any thread at exit
  return *clock;
}

RetryState::RetryState(const RetryOptions& options, Idempotency idempotency, Clock& clock,
                       std::uint64_t seed)
    : options_(options),
      idempotency_(idempotency),
      clock_(clock),
      rng_(seed != 0 ? seed : std::random_device{}()) {
  budget_end_ = RetryBudgetScope::current();
  bounded_ = budget_end_ != absl::InfiniteFuture();
}

absl::Time RetryState::deadline() const {
  const absl::Time own = failing_since_ ? *failing_since_ + to_absl(options_.deadline)
                                        : clock_.now() + to_absl(options_.deadline);
  return std::min(own, budget_end_);
}

std::optional<absl::Duration> RetryState::on_failure(const absl::Status& error) {
  ++attempts_;
  ++failures_;
  if (!failing_since_) failing_since_ = clock_.now();
  if (!is_transient(error) || idempotency_ != Idempotency::kIdempotent) return std::nullopt;
  if (attempts_ >= std::max(1, options_.max_attempts)) return std::nullopt;
  // Full jitter: uniform in [0, ceiling], the ceiling growing exponentially to max_backoff.
  double ceiling_ms = static_cast<double>(options_.initial_backoff.count()) *
                      std::pow(std::max(1.0, options_.multiplier), attempts_ - 1);
  ceiling_ms = std::min(ceiling_ms, static_cast<double>(options_.max_backoff.count()));
  std::uniform_real_distribution<double> dist(0.0, std::max(0.0, ceiling_ms));
  absl::Duration delay = absl::Milliseconds(dist(rng_));
  if (clock_.now() + delay >= deadline()) return std::nullopt;
  if (log_enabled(LogLevel::kWarning)) {
    // The status names the operation and URL (redacted, as every error is).
    log(LogLevel::kWarning,
        absl::StrCat("retry ", attempts_ + 1, "/", std::max(1, options_.max_attempts), " in ",
                     absl::ToInt64Milliseconds(delay), " ms after ",
                     absl::StatusCodeToString(error.code()), ": ", error.message()));
  }
  return delay;
}

void RetryState::on_progress() {
  attempts_ = 0;
  failing_since_.reset();
}

absl::Duration RetryState::remaining() const {
  return std::max(absl::ZeroDuration(), deadline() - clock_.now());
}

absl::Status RetryState::final_error(const absl::Status& last) const {
  if (failures_ <= 1) return last;
  const absl::Duration took =
      absl::Trunc(clock_.now() - failing_since_.value_or(clock_.now()), absl::Milliseconds(100));
  return absl::Status(last.code(),
                      absl::StrCat(last.message(), " (after ", failures_, " attempts, failing for ",
                                   absl::FormatDuration(took), "; retry limits: ",
                                   std::max(1, options_.max_attempts), " attempts, ",
                                   absl::FormatDuration(to_absl(options_.deadline)), ")"));
}

absl::Status retry_loop_status(RetryState& state, const std::function<absl::Status(int)>& op) {
  for (int attempt = 1;; ++attempt) {
    absl::Status status = op(attempt);
    if (status.ok()) return status;
    auto delay = state.on_failure(status);
    if (!delay) return state.final_error(status);
    state.clock().sleep_for(*delay);
  }
}

}  // namespace dataflux::internal
