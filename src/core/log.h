// The library's side of dataflux/log.h: log() checks the level before anything is formatted
// by the caller (use enabled() around costly messages).
#ifndef DATAFLUX_SRC_CORE_LOG_H_
#define DATAFLUX_SRC_CORE_LOG_H_

#include <string_view>

#include "dataflux/log.h"

namespace dataflux::internal {

bool log_enabled(LogLevel level);
void log(LogLevel level, std::string_view message);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_LOG_H_
