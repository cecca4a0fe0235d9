// The emulator must take a burst of connections at once: our transport opens hundreds when it
// starts (one per request in flight), and an accept queue that overflows drops SYNs, which
// TCP retries only after 1 s, 3 s, 7 s... — invisible in correctness, ruinous for benchmarks.
#include <fcntl.h>
#include <poll.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "emulator_fixture.h"

namespace dataflux::emulator::testing {
namespace {

TEST_F(EmulatorTest, AcceptsABurstOfConnectionsWithoutDroppingAny) {
  constexpr int kConnections = 300;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(emu_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::vector<int> fds;
  for (int i = 0; i < kConnections; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0);
    connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));  // EINPROGRESS expected
    fds.push_back(fd);
  }
  // Every handshake completes on loopback in well under TCP's first SYN retransmit (1 s)
  // unless the listen queue overflowed.
  int connected = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(700);
  std::vector<bool> done(fds.size(), false);
  while (connected < kConnections && std::chrono::steady_clock::now() < deadline) {
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (done[i]) continue;
      pollfd p{fds[i], POLLOUT, 0};
      if (poll(&p, 1, 0) == 1) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &err, &len);
        ASSERT_EQ(err, 0) << "connection " << i << " failed";
        done[i] = true;
        ++connected;
      }
    }
  }
  for (int fd : fds) close(fd);
  EXPECT_EQ(connected, kConnections);
  // And the server still answers afterwards.
  auto res = client_->Get("/storage/v1/b/test-bucket/o");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

// Every connection holds a server thread for its whole keep-alive life, so the default must
// serve more connections held open at once than our transport keeps (256 per host); with a
// fixed pool of 64 the 65th client waited for an idle connection to time out. Here the idle
// timeout is a minute and each client waits at most 30 s for its answer, holding its
// connection open until every client has been answered: with too few threads the clients
// past them time out.
TEST_F(EmulatorTest, ServesManyKeepAliveConnectionsAtOnceOnDefaultOptions) {
  EmulatorOptions options;
  options.keep_alive_timeout = absl::Seconds(60);
  ASSERT_GE(options.threads, 300);  // the default
  start(options);
  constexpr int kClients = 300;
  std::mutex mu;
  std::condition_variable cv;
  int answered = 0;
  std::vector<int> statuses(kClients, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      auto client = make_client();
      client->set_keep_alive(true);
      client->set_read_timeout(30);
      auto res = client->Get("/storage/v1/b/test-bucket/o");
      std::unique_lock<std::mutex> lock(mu);
      statuses[static_cast<std::size_t>(i)] = res ? res->status : -1;
      ++answered;
      cv.notify_all();
      // Keep the connection open (and its server thread busy) until all are answered.
      cv.wait(lock, [&] { return answered == kClients; });
    });
  }
  for (auto& client : clients) client.join();
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(statuses[static_cast<std::size_t>(i)], 200) << i;
  EXPECT_EQ(emu_->request_count("objects.list"), static_cast<std::uint64_t>(kClients));
}

}  // namespace
}  // namespace dataflux::emulator::testing
