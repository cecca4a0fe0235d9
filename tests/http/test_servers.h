// Loopback peers for the transport tests: an httplib server on a free 127.0.0.1 port, and a
// raw TCP server whose per-connection script a test writes (broken streams, stalls, interim
// responses), since a well-behaved server library cannot misbehave on demand.
#ifndef DATAFLUX_TESTS_HTTP_TEST_SERVERS_H_
#define DATAFLUX_TESTS_HTTP_TEST_SERVERS_H_

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dataflux::testing {

class TestServer {
 public:
  explicit TestServer(const std::function<void(httplib::Server&)>& setup,
                      std::size_t threads = 16) {
    server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server_.set_keep_alive_max_count(100000);
    server_.set_keep_alive_timeout(1);
    // Headers and body go out in separate writes; Nagle would hold the body for an ACK.
    server_.set_tcp_nodelay(true);
    setup(server_);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~TestServer() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
};

// Accepts connections on 127.0.0.1 and runs `serve(fd)` on a thread per connection. `serve`
// must return within a few seconds; the destructor joins it.
class RawServer {
 public:
  explicit RawServer(std::function<void(int fd)> serve) : serve_(std::move(serve)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(listen_fd_, 64);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~RawServer() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : handlers_) t.join();
    ::close(listen_fd_);
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      handlers_.emplace_back([this, fd] {
        serve_(fd);
        ::close(fd);
      });
    }
  }

  std::function<void(int)> serve_;
  int listen_fd_ = -1;
  int port_ = -1;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> handlers_;  // acceptor thread only, until joined
};

// Reads one request head (up to the blank line) into `head` if given; false on EOF or after
// `timeout`.
inline bool read_request_head(int fd, std::chrono::milliseconds timeout = std::chrono::seconds(5),
                              std::string* head = nullptr) {
  std::string data;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (data.find("\r\n\r\n") == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    data.append(buf, static_cast<std::size_t>(n));
  }
  if (head != nullptr) *head = data;
  return true;
}

inline void write_all(int fd, const std::string& data) {
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

// Waits until the peer closes the connection (or `timeout`), discarding what it sends.
inline void wait_for_close(int fd, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
    char buf[4096];
    if (::recv(fd, buf, sizeof(buf), 0) <= 0) return;
  }
}

// A port on 127.0.0.1 with nobody listening (bound, then released).
inline int unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Counts callbacks and lets a test wait for a number of them, with a bound.
class Latch {
 public:
  void count_down() {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    cv_.notify_all();
  }
  bool wait_for(int n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return count_ >= n; });
  }
  int count() {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

// Tracks how many handlers run at once, and the most ever seen.
class ConcurrencyGauge {
 public:
  void enter() {
    int now = ++active_;
    int prev = peak_.load();
    while (now > prev && !peak_.compare_exchange_weak(prev, now)) {
    }
  }
  void leave() { --active_; }
  int peak() const { return peak_.load(); }

 private:
  std::atomic<int> active_{0};
  std::atomic<int> peak_{0};
};

}  // namespace dataflux::testing

#endif  // DATAFLUX_TESTS_HTTP_TEST_SERVERS_H_
