// The emulator's knobs: per-operation fault queues, request counters, the cloud model with
// its request-rate token bucket, and sleeps that end early when the server stops.
#ifndef DATAFLUX_SRC_EMULATOR_CONTROL_H_
#define DATAFLUX_SRC_EMULATOR_CONTROL_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>

#include "absl/status/statusor.h"
#include "emulator/emulator.h"

namespace dataflux::emulator::internal {

class Control {
 public:
  void inject(const std::string& operation, Fault fault);
  std::optional<Fault> take(const std::string& operation);  // the next fault, FIFO
  std::size_t pending(const std::string& operation) const;
  void clear_faults();
  void set_chaos(ChaosOptions chaos);
  std::map<std::string, std::uint64_t> chaos_counts() const;

  // Actions run once, after the next request of `operation` was executed and before its reply
  // is sent (FIFO per operation).
  void after_next(const std::string& operation, std::function<void()> action);
  void run_after(const std::string& operation);

  void count(const std::string& operation);
  std::uint64_t count_of(const std::string& operation) const;
  void reset_counters();
  std::string counters_json() const;  // {"objects.get": 3, ...}

  void set_model(CloudModel model);
  CloudModel model() const;
  // Takes one token from the request-rate bucket (which holds one second of requests);
  // false when empty: answer 429. Always true with no rate limit.
  bool admit();

  // Sleeps up to `duration`; false (early) when stop() was called.
  bool sleep_for(absl::Duration duration);
  bool sleep_until(std::chrono::steady_clock::time_point deadline);
  void stop();
  bool stopping() const;

  // The bodies of POST /_dataflux/faults and /_dataflux/model.
  absl::Status apply_fault_json(const std::string& body);
  absl::Status apply_model_json(const std::string& body);

 private:
  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::map<std::string, std::deque<Fault>> faults_;
  std::map<std::string, std::deque<std::function<void()>>> after_;
  std::map<std::string, std::uint64_t> counters_;
  ChaosOptions chaos_;
  std::mt19937_64 chaos_rng_;
  std::map<std::string, std::uint64_t> chaos_counts_;
  CloudModel model_;
  double tokens_ = 0;
  std::chrono::steady_clock::time_point refilled_at_{};
};

}  // namespace dataflux::emulator::internal

#endif  // DATAFLUX_SRC_EMULATOR_CONTROL_H_
