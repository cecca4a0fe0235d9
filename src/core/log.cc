#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/ascii.h"

namespace dataflux {
namespace {

LogLevel level_from_environment() {
  const char* value = std::getenv("DATAFLUX_LOG");
  if (value == nullptr) return LogLevel::kWarning;
  const std::string v = absl::AsciiStrToLower(value);
  if (v == "debug") return LogLevel::kDebug;
  if (v == "info") return LogLevel::kInfo;
  if (v == "error") return LogLevel::kError;
  if (v == "off" || v == "none") return LogLevel::kOff;
  return LogLevel::kWarning;  // "warning", and anything unrecognised
}

std::atomic<int>& level() {
  static std::atomic<int> level{static_cast<int>(level_from_environment())};
  return level;
}

// The sink is replaced under the mutex and copied out of it, so a record being written while
// another thread swaps the sink uses one or the other, whole.
struct Sink {
  std::mutex mu;
  std::shared_ptr<const LogSink> sink;  // null = stderr
};
Sink& sink() {
  static Sink* s = new Sink();  // never destroyed: records may come from threads at exit
  return *s;
}

}  // namespace

void set_log_sink(LogSink s) {
  auto next = s ? std::make_shared<const LogSink>(std::move(s)) : nullptr;
  std::lock_guard<std::mutex> lock(sink().mu);
  sink().sink = std::move(next);
}

void set_log_level(LogLevel l) { level().store(static_cast<int>(l)); }
LogLevel log_level() { return static_cast<LogLevel>(level().load()); }

std::string_view log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off";
  }
  return "?";
}

namespace internal {

bool log_enabled(LogLevel l) {
  return l != LogLevel::kOff && static_cast<int>(l) >= level().load(std::memory_order_relaxed);
}

void log(LogLevel l, std::string_view message) {
  if (!log_enabled(l)) return;
  std::shared_ptr<const LogSink> s;
  {
    std::lock_guard<std::mutex> lock(sink().mu);
    s = sink().sink;
  }
  if (s) {
    try {
      (*s)(l, message);
    } catch (...) {  // a sink that throws must not take a transport thread down with it
    }
    return;
  }
  const std::string line = std::string("dataflux ") + std::string(log_level_name(l)) + ": " +
                           std::string(message) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace internal
}  // namespace dataflux
