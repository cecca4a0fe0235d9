// Request/response behaviour of HttpTransport against loopback peers: methods and bodies,
// headers, large streamed responses, and the mapping of every failure to a Status.
#include "http/http_transport.h"

#include <poll.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/ascii.h"
#include "http/test_servers.h"

namespace dataflux::internal {
namespace {

using ::dataflux::testing::RawServer;
using ::dataflux::testing::read_request_head;
using ::dataflux::testing::TestServer;
using ::dataflux::testing::unused_port;
using ::dataflux::testing::wait_for_close;
using ::dataflux::testing::write_all;
using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

// Echoes the method, the body and the body-related headers the server saw.
void install_echo(httplib::Server& server) {
  auto echo = [](const httplib::Request& req, httplib::Response& res) {
    res.set_header("X-Method", req.method);
    res.set_header("X-Has-Content-Length", req.has_header("Content-Length") ? "yes" : "no");
    res.set_header("X-Content-Type", req.get_header_value("Content-Type"));
    res.set_header("X-Expect", req.get_header_value("Expect"));
    res.set_content(req.body, "application/octet-stream");
  };
  server.Get("/echo", echo);
  server.Put("/echo", echo);
  server.Post("/echo", echo);
  server.Patch("/echo", echo);
  server.Delete("/echo", echo);
}

HttpRequest make_request(std::string method, std::string url) {
  HttpRequest req;
  req.method = std::move(method);
  req.url = std::move(url);
  return req;
}

TEST(HttpTransportTest, GetReturnsBodyStatusAndStats) {
  TestServer server([](httplib::Server& s) {
    s.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("hello world", "text/plain");
    });
  });
  HttpTransport transport;
  HttpResponse resp = transport.send(make_request("GET", server.url("/hello")));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.http_status, 200);
  EXPECT_EQ(resp.body, "hello world");
  EXPECT_EQ(resp.body_bytes, 11u);
  EXPECT_EQ(resp.header("content-type"), "text/plain");
  auto stats = transport.stats();
  EXPECT_EQ(stats.requests_submitted, 1u);
  EXPECT_EQ(stats.requests_completed, 1u);
  EXPECT_EQ(stats.requests_failed, 0u);
  EXPECT_EQ(stats.in_flight, 0u);
  EXPECT_EQ(stats.bytes_received, 11u);
  EXPECT_EQ(stats.connections_opened, 1u);
}

TEST(HttpTransportTest, HttpErrorStatusIsATransportSuccess) {
  TestServer server([](httplib::Server& s) {
    s.Get("/missing", [](const httplib::Request&, httplib::Response& res) {
      res.status = 404;
      res.set_content("no such object", "text/plain");
    });
  });
  HttpTransport transport;
  HttpResponse resp = transport.send(make_request("GET", server.url("/missing")));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.http_status, 404);
  EXPECT_EQ(resp.body, "no such object");
}

TEST(HttpTransportTest, ErrorBodiesNeverReachTheSink) {
  std::string huge_error(200 << 10, 'e');
  TestServer server([&](httplib::Server& s) {
    s.Get("/missing", [](const httplib::Request&, httplib::Response& res) {
      res.status = 404;
      res.set_content("{\"error\":{\"message\":\"No such object\"}}", "application/json");
    });
    s.Get("/huge", [&](const httplib::Request&, httplib::Response& res) {
      res.status = 503;
      res.set_content(huge_error, "text/plain");
    });
    s.Get("/ok", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("object bytes", "application/octet-stream");
    });
  });
  HttpTransport transport;
  std::string sunk;
  auto with_sink = [&](const std::string& path) {
    HttpRequest req = make_request("GET", server.url(path));
    req.body_sink = [&](const char* data, std::size_t n) {
      sunk.append(data, n);
      return true;
    };
    return transport.send(std::move(req));
  };
  HttpResponse missing = with_sink("/missing");
  ASSERT_TRUE(missing.status.ok()) << missing.status;
  EXPECT_EQ(missing.http_status, 404);
  EXPECT_EQ(missing.body, "{\"error\":{\"message\":\"No such object\"}}");
  EXPECT_EQ(sunk, "");
  HttpResponse huge = with_sink("/huge");
  EXPECT_EQ(huge.http_status, 503);
  EXPECT_EQ(huge.body.size(), 64u << 10);  // capped
  EXPECT_EQ(sunk, "");
  HttpResponse ok = with_sink("/ok");
  EXPECT_EQ(ok.http_status, 200);
  EXPECT_EQ(sunk, "object bytes");
  EXPECT_EQ(ok.body, "");
}

TEST(HttpTransportTest, MethodsCarryOwnedAndViewBodies) {
  TestServer server(install_echo);
  HttpTransport transport;

  auto put = make_request("PUT", server.url("/echo"));
  put.body = std::string("owned\0bytes", 11);
  HttpResponse resp = transport.send(std::move(put));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.header("x-method"), "PUT");
  EXPECT_EQ(resp.body, std::string("owned\0bytes", 11));
  // No form-encoding label and no 100-continue round trip.
  EXPECT_EQ(resp.header("x-content-type"), "");
  EXPECT_EQ(resp.header("x-expect"), "");

  const std::string kept_alive = "bytes the caller owns";
  auto post = make_request("POST", server.url("/echo"));
  post.body = "ignored: the view wins";
  post.body_view = std::string_view(kept_alive);
  post.headers.emplace_back("Content-Type", "application/json");
  resp = transport.send(std::move(post));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.header("x-method"), "POST");
  EXPECT_EQ(resp.body, kept_alive);
  EXPECT_EQ(resp.header("x-content-type"), "application/json");

  auto patch = make_request("PATCH", server.url("/echo"));
  patch.body = R"({"metadata":{}})";
  resp = transport.send(std::move(patch));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.header("x-method"), "PATCH");
  EXPECT_EQ(resp.body, R"({"metadata":{}})");

  resp = transport.send(make_request("DELETE", server.url("/echo")));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.header("x-method"), "DELETE");
  EXPECT_EQ(resp.header("x-has-content-length"), "no");

  resp = transport.send(make_request("GET", server.url("/echo")));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.header("x-method"), "GET");
  EXPECT_EQ(resp.header("x-has-content-length"), "no");

  resp = transport.send(make_request("POST", server.url("/echo")));  // empty body
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.header("x-has-content-length"), "yes");
  EXPECT_EQ(resp.body, "");
  EXPECT_GT(transport.stats().bytes_sent, 0u);
}

TEST(HttpTransportTest, BinaryBodiesRoundTripExactly) {
  TestServer server(install_echo);
  HttpTransport transport;
  std::string payload(1 << 20, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i) {
    payload[i] = static_cast<char>((i * 131 + i / 251) & 0xff);
  }
  auto put = make_request("PUT", server.url("/echo"));
  put.body_view = std::string_view(payload);
  HttpResponse resp = transport.send(std::move(put));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  ASSERT_EQ(resp.body.size(), payload.size());
  EXPECT_TRUE(resp.body == payload);
}

TEST(HttpTransportTest, LargeResponseStreamsToSinkExactly) {
  constexpr std::size_t kSize = 64u << 20;
  auto byte_at = [](std::size_t i) { return static_cast<char>((i ^ (i >> 13)) & 0xff); };
  TestServer server([&](httplib::Server& s) {
    s.Get("/big", [&](const httplib::Request&, httplib::Response& res) {
      res.set_content_provider(
          kSize, "application/octet-stream",
          [&](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
            std::string chunk(std::min<std::size_t>(length, 256 << 10), '\0');
            for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = byte_at(offset + i);
            sink.write(chunk.data(), chunk.size());
            return true;
          });
    });
  });
  HttpTransport transport;
  std::size_t received = 0;
  std::size_t mismatches = 0;
  auto req = make_request("GET", server.url("/big"));
  req.body_sink = [&](const char* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) mismatches += data[i] != byte_at(received + i);
    received += size;
    return true;
  };
  HttpResponse resp = transport.send(std::move(req));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(received, kSize);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(resp.body_bytes, kSize);
  EXPECT_TRUE(resp.body.empty());
}

TEST(HttpTransportTest, ResponseHeadersAreLowercasedTrimmedAndRepeatable) {
  TestServer server([](httplib::Server& s) {
    s.Get("/h", [](const httplib::Request&, httplib::Response& res) {
      res.set_header("X-Goog-Hash", "crc32c=AAAAAA==");
      res.set_header("X-Goog-Hash", "md5=BBBB");
      res.set_header("X-Padded", "  spaced value\t");
      res.set_content("", "text/plain");
    });
  });
  HttpTransport transport;
  HttpResponse resp = transport.send(make_request("GET", server.url("/h")));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_THAT(resp.header_values("x-goog-hash"),
              ::testing::ElementsAre("crc32c=AAAAAA==", "md5=BBBB"));
  EXPECT_EQ(resp.header("x-padded"), "spaced value");
  EXPECT_EQ(resp.header("X-Goog-Hash"), std::nullopt);  // lookups use lowercase names
  for (const auto& [name, value] : resp.headers) {
    EXPECT_EQ(name, absl::AsciiStrToLower(name));
  }
}

TEST(HttpTransportTest, RequestHeadersAreSentAsGiven) {
  std::mutex mu;
  std::string head;
  RawServer server([&](int fd) {
    std::string seen;
    if (!read_request_head(fd, std::chrono::seconds(5), &seen)) return;
    {
      std::lock_guard<std::mutex> lock(mu);
      head = seen;
    }
    write_all(fd, "HTTP/1.1 204 No Content\r\n\r\n");
    wait_for_close(fd);
  });
  HttpTransport transport;
  auto req = make_request("GET", server.url("/h"));
  req.headers = {{"X-Custom", "value 1"}, {"X-Empty", ""}};
  HttpResponse resp = transport.send(std::move(req));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.http_status, 204);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_THAT(head, HasSubstr("\r\nX-Custom: value 1\r\n"));
  EXPECT_THAT(head, HasSubstr("\r\nX-Empty:\r\n"));
  // Bytes must arrive as stored: no compression negotiated, no 100-continue.
  EXPECT_THAT(head, Not(HasSubstr("Accept-Encoding")));
  EXPECT_THAT(head, Not(HasSubstr("Expect")));
}

TEST(HttpTransportTest, InterimResponseHeadersAreDropped) {
  RawServer server([](int fd) {
    if (!read_request_head(fd)) return;
    write_all(fd,
              "HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n"
              "HTTP/1.1 200 OK\r\nX-Final: 2\r\nContent-Length: 2\r\n\r\nok");
    wait_for_close(fd);
  });
  HttpTransport transport;
  HttpResponse resp = transport.send(make_request("GET", server.url("/x")));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.http_status, 200);
  EXPECT_EQ(resp.body, "ok");
  EXPECT_EQ(resp.header("x-interim"), std::nullopt);
  EXPECT_EQ(resp.header("x-final"), "2");
}

TEST(HttpTransportTest, ConnectionRefusedIsUnavailableQuickly) {
  HttpTransport transport;
  const std::string url = "http://127.0.0.1:" + std::to_string(unused_port()) + "/o";
  auto start = Clock::now();
  HttpResponse resp = transport.send(make_request("GET", url));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(resp.status.code(), absl::StatusCode::kUnavailable) << resp.status;
  EXPECT_THAT(std::string(resp.status.message()), HasSubstr("GET " + url + ": "));
  EXPECT_EQ(transport.stats().requests_failed, 1u);
}

TEST(HttpTransportTest, ErrorMessagesNeverCarryHeaderValues) {
  HttpTransport transport;
  auto req = make_request("GET", "http://127.0.0.1:" + std::to_string(unused_port()) + "/o");
  req.headers.emplace_back("Authorization", "Bearer very-secret-token");
  HttpResponse resp = transport.send(std::move(req));
  ASSERT_FALSE(resp.status.ok());
  EXPECT_THAT(std::string(resp.status.message()), Not(HasSubstr("very-secret-token")));

  auto bad = make_request("GET", "http://127.0.0.1:1/o");
  bad.headers.emplace_back("Authorization", "Bearer secret\r\nX-Injected: 1");
  resp = transport.send(std::move(bad));
  EXPECT_EQ(resp.status.code(), absl::StatusCode::kInvalidArgument) << resp.status;
  EXPECT_THAT(std::string(resp.status.message()), HasSubstr("Authorization"));
  EXPECT_THAT(std::string(resp.status.message()), Not(HasSubstr("secret")));
}

// A server that never stops sending cannot make a JSON, XML or token reply fill memory.
TEST(HttpTransportTest, AnAccumulatedReplyLargerThanItsCapIsRefused) {
  TestServer server([](httplib::Server& s) {
    s.Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider(
          "application/json", [](std::size_t, httplib::DataSink& sink) {
            const std::string chunk(64 << 10, ' ');
            for (int i = 0; i < 64; ++i) {  // 4 MiB, far past the cap below
              if (!sink.write(chunk.data(), chunk.size())) return false;
            }
            sink.done();
            return true;
          });
    });
  });
  HttpTransport transport;
  auto req = make_request("GET", server.url("/big"));
  req.max_body_bytes = 1 << 20;
  HttpResponse resp = transport.send(std::move(req));
  EXPECT_EQ(resp.status.code(), absl::StatusCode::kInternal) << resp.status;
  EXPECT_THAT(std::string(resp.status.message()), HasSubstr("reply exceeds 1048576 bytes"));
  EXPECT_THAT(std::string(resp.status.message()), HasSubstr("GET " + server.url("/big")));
  EXPECT_LE(resp.body.size(), 1u << 20);

  auto small = make_request("GET", server.url("/big"));  // the default cap (64 MiB) lets it in
  resp = transport.send(std::move(small));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.body.size(), 4u << 20);
}

// Resumable session URLs and signed URLs are capabilities: they never appear in a message.
TEST(HttpTransportTest, ErrorMessagesNeverCarrySessionOrSignatureParameters) {
  HttpTransport transport;
  const std::string base = "http://127.0.0.1:" + std::to_string(unused_port());
  for (const char* query :
       {"/upload/storage/v1/b/b/o?uploadType=resumable&upload_id=SECRET-SESSION",
        "/b/k?partNumber=1&uploadId=SECRET-SESSION",
        "/b/k?X-Goog-Algorithm=x&X-Goog-Signature=SECRET-SESSION&X-Goog-Credential=SECRET-SESSION",
        "/b/k?X-Amz-Signature=SECRET-SESSION&X-Amz-Security-Token=SECRET-SESSION"}) {
    HttpResponse resp = transport.send(make_request("PUT", base + query));
    ASSERT_FALSE(resp.status.ok());
    const std::string message(resp.status.message());
    EXPECT_THAT(message, Not(HasSubstr("SECRET-SESSION"))) << message;
    EXPECT_THAT(message, HasSubstr("REDACTED")) << message;
    EXPECT_THAT(message, HasSubstr(base + std::string(query).substr(0, 6))) << message;
  }
}

// A keep-alive connection that died while idle (the server drops it after reading the next
// request, as a load balancer's idle timeout does): libcurl would send that request again on a
// fresh connection. For a request that must not be applied twice, there is no second copy.
TEST(HttpTransportTest, ANonIdempotentRequestIsNeverReplayedOnADeadReusedConnection) {
  std::atomic<int> gets{0}, posts{0};
  RawServer server([&](int fd) {
    std::string head;
    for (int n = 0; read_request_head(fd, std::chrono::seconds(5), &head); ++n) {
      ++(head.rfind("POST", 0) == 0 ? posts : gets);
      if (n > 0) return;  // the second request on a connection: dropped unanswered
      write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    }
  });
  HttpTransport transport;
  ASSERT_TRUE(transport.send(make_request("GET", server.url("/warm"))).status.ok());
  auto post = make_request("POST", server.url("/apply-once"));
  post.idempotent = false;
  HttpResponse resp = transport.send(std::move(post));
  EXPECT_TRUE(resp.status.ok()) << resp.status;  // on a connection of its own
  EXPECT_EQ(posts.load(), 1);

  // The same with an idempotent request shows what libcurl does otherwise: sent twice.
  ASSERT_TRUE(transport.send(make_request("GET", server.url("/warm-again"))).status.ok());
  const int before = gets.load();
  HttpResponse get = transport.send(make_request("GET", server.url("/replayed")));
  EXPECT_TRUE(get.status.ok()) << get.status;
  EXPECT_EQ(gets.load() - before, 2);
}

TEST(HttpTransportTest, ServerClosingMidBodyIsUnavailable) {
  RawServer server([](int fd) {
    if (!read_request_head(fd)) return;
    write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789");
  });  // closes after 10 of 1000 bytes
  HttpTransport transport;
  HttpResponse resp = transport.send(make_request("GET", server.url("/o")));
  EXPECT_EQ(resp.status.code(), absl::StatusCode::kUnavailable) << resp.status;
  EXPECT_EQ(resp.body_bytes, 10u);  // what arrived is kept: a retry can resume after it
  EXPECT_EQ(resp.body, "0123456789");
}

TEST(HttpTransportTest, EmptyReplyIsUnavailable) {
  RawServer server([](int fd) { read_request_head(fd); });
  HttpTransport transport;
  HttpResponse resp = transport.send(make_request("GET", server.url("/o")));
  EXPECT_EQ(resp.status.code(), absl::StatusCode::kUnavailable) << resp.status;
}

TEST(HttpTransportTest, StallIsDeadlineExceededSoonAfterStallTimeout) {
  RawServer server([](int fd) {
    if (!read_request_head(fd)) return;
    write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabcde");
    wait_for_close(fd);  // then nothing more
  });
  TransportOptions options;
  options.stall_timeout = std::chrono::milliseconds(200);
  HttpTransport transport(options);
  auto start = Clock::now();
  HttpResponse resp = transport.send(make_request("GET", server.url("/o")));
  auto elapsed = Clock::now() - start;
  EXPECT_EQ(resp.status.code(), absl::StatusCode::kDeadlineExceeded) << resp.status;
  EXPECT_THAT(std::string(resp.status.message()), HasSubstr("stalled: no data for 200ms"));
  EXPECT_GE(elapsed, std::chrono::milliseconds(200));
  EXPECT_LT(elapsed, std::chrono::milliseconds(200 + 1800));  // generous: CI is loaded
  EXPECT_EQ(resp.body_bytes, 5u);
}

TEST(HttpTransportTest, SlowButSteadyTransferIsNotAStall) {
  RawServer server([](int fd) {
    if (!read_request_head(fd)) return;
    write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n");
    for (int i = 0; i < 8; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
      write_all(fd, "x");
    }
    wait_for_close(fd);
  });
  HttpTransport transport;
  auto req = make_request("GET", server.url("/o"));
  req.stall_timeout = absl::Milliseconds(200);  // total time ~480ms, no gap over 60ms
  HttpResponse resp = transport.send(std::move(req));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.body, "xxxxxxxx");
}

TEST(HttpTransportTest, RequestTimeoutIsDeadlineExceeded) {
  RawServer server([](int fd) {
    if (!read_request_head(fd)) return;
    wait_for_close(fd);
  });
  HttpTransport transport;
  auto req = make_request("GET", server.url("/o"));
  req.timeout = absl::Milliseconds(150);
  auto start = Clock::now();
  HttpResponse resp = transport.send(std::move(req));
  EXPECT_EQ(resp.status.code(), absl::StatusCode::kDeadlineExceeded) << resp.status;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

TEST(HttpTransportTest, SinkReturningFalseIsCancelled) {
  TestServer server([](httplib::Server& s) {
    s.Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(4 << 20, 'z'), "application/octet-stream");
    });
  });
  HttpTransport transport;
  auto req = make_request("GET", server.url("/big"));
  std::size_t calls = 0;
  req.body_sink = [&](const char*, std::size_t) { return ++calls < 3; };
  HttpResponse resp = transport.send(std::move(req));
  EXPECT_EQ(resp.status.code(), absl::StatusCode::kCancelled) << resp.status;
  EXPECT_EQ(calls, 3u);  // nothing delivered after the refusal
  // The connection is unusable now, but the transport is not.
  resp = transport.send(make_request("GET", server.url("/big")));
  ASSERT_TRUE(resp.status.ok()) << resp.status;
  EXPECT_EQ(resp.body.size(), 4u << 20);
}

TEST(HttpTransportTest, ConnectTimeoutIsDeadlineExceeded) {
  // A listener whose accept queue is full drops further SYNs, so connect() hangs.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 0), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    fillers.push_back(c);
  }
  // The first filler's handshake completing fills the accept queue (backlog 0 holds one).
  pollfd first{fillers[0], POLLOUT, 0};
  ASSERT_EQ(::poll(&first, 1, 5000), 1);

  TransportOptions options;
  options.connect_timeout = std::chrono::milliseconds(200);
  HttpTransport transport(options);
  auto start = Clock::now();
  HttpResponse resp = transport.send(
      make_request("GET", "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/o"));
  auto elapsed = Clock::now() - start;
  for (int c : fillers) ::close(c);
  ::close(fd);
  EXPECT_EQ(resp.status.code(), absl::StatusCode::kDeadlineExceeded) << resp.status;
  EXPECT_GE(elapsed, std::chrono::milliseconds(150));
  EXPECT_LT(elapsed, std::chrono::seconds(2));
}

}  // namespace
}  // namespace dataflux::internal
