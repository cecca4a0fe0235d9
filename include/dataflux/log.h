// What the library says while it works: each retry (with the URL, the attempt and the cause),
// each resumed read, each fallback (a compose batch read object by object instead). Never a
// token, key, signature, session URL or upload id: messages are built from the same redacted
// text as errors.
//
// By default records at kWarning and above go to stderr, one line each. DATAFLUX_LOG=debug,
// info, warning, error or off changes the level at start-up; set_log_level() and
// set_log_sink() change it and where records go, from any thread at any time.
//
//   dataflux::set_log_sink([](dataflux::LogLevel level, std::string_view message) {
//     my_logger.write(dataflux::log_level_name(level), message);
//   });
#ifndef DATAFLUX_LOG_H_
#define DATAFLUX_LOG_H_

#include <functional>
#include <string_view>

namespace dataflux {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

// Called for each record at or above the level, from whichever thread the event happened on
// (often a transport thread): keep it short and do not block.
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

// nullptr restores the default sink (stderr).
void set_log_sink(LogSink sink);
void set_log_level(LogLevel level);
LogLevel log_level();
std::string_view log_level_name(LogLevel level);  // "debug", "info", "warning", ...

}  // namespace dataflux

#endif  // DATAFLUX_LOG_H_
