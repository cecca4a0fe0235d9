// TransportOptions: the process-wide HTTP engine behind the GCS and S3 stores.
//
// One libcurl multi loop per process drives every request on a few threads, reusing
// keep-alive connections. The limits below give back-pressure: requests beyond them wait in
// a queue rather than opening more sockets or holding more memory.
//
//   dataflux::TransportOptions transport;
//   transport.max_requests_in_flight = 512;
//   transport.stall_timeout = std::chrono::seconds(10);
#ifndef DATAFLUX_TRANSPORT_H_
#define DATAFLUX_TRANSPORT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace dataflux {

struct TransportOptions {
  std::size_t max_requests_in_flight = 256;           // concurrent HTTP requests
  std::uint64_t max_bytes_in_flight = 2ull << 30;     // bytes requests may hold at once
  std::size_t max_connections_per_host = 0;           // 0 = max_requests_in_flight
  std::size_t threads = 1;                            // event-loop threads
  std::chrono::milliseconds connect_timeout{10'000};  // TCP (and TLS) connect
  std::chrono::milliseconds stall_timeout{30'000};    // abort when no byte moves for this long
  std::chrono::milliseconds request_timeout{0};       // whole request; 0 = none
};

}  // namespace dataflux

#endif  // DATAFLUX_TRANSPORT_H_
