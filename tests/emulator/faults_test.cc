// Fault injection seen from the client, the HTTP control endpoint, counters, and the cloud
// model (latency, bandwidth, request-rate limit), plus keep-alive and bad requests.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "emulator/emulator_fixture.h"

namespace dataflux::emulator::testing {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class FaultTest : public EmulatorTest {
 protected:
  void SetUp() override {
    EmulatorTest::SetUp();
    data_ = std::string(1 << 20, 'd');
    ASSERT_TRUE(emu_->put_object(kBucket, "obj", data_).ok());
    media_ = object_path("obj") + "?alt=media";
  }
  std::string data_;
  std::string media_;
};

TEST_F(FaultTest, StatusFaultsAreFifoPerOperationAndCounted) {
  emu_->inject_fault("objects.media", Fault::status(503));
  emu_->inject_fault("objects.media", Fault::status(429));
  EXPECT_EQ(emu_->pending_faults("objects.media"), 2u);
  // Another operation is untouched.
  EXPECT_EQ(client_->Get(object_path("obj").c_str())->status, 200);
  auto res = client_->Get(media_.c_str());
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(error_reason(res->body), "backendError");
  res = client_->Get(media_.c_str());
  EXPECT_EQ(res->status, 429);
  EXPECT_EQ(error_reason(res->body), "rateLimitExceeded");
  res = client_->Get(media_.c_str());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, data_);
  EXPECT_EQ(emu_->request_count("objects.media"), 3u);
  EXPECT_EQ(emu_->request_count("objects.get"), 1u);
  EXPECT_EQ(emu_->pending_faults("objects.media"), 0u);

  emu_->inject_fault("objects.insert", Fault::status(500));
  EXPECT_EQ(
      client_
          ->Post((std::string("/upload/storage/v1/b/") + kBucket + "/o?uploadType=media&name=n")
                     .c_str(),
                 "x", "text/plain")
          ->status,
      500);
  EXPECT_FALSE(emu_->get_object_data(kBucket, "n").ok());  // a faulted request has no effect
  emu_->inject_fault("objects.list", Fault::status(500));
  emu_->clear_faults();
  EXPECT_EQ(emu_->pending_faults("objects.list"), 0u);
  emu_->reset_counters();
  EXPECT_EQ(emu_->request_count("objects.media"), 0u);
}

TEST_F(FaultTest, ResetDropsTheConnectionWithoutAResponse) {
  emu_->inject_fault("objects.get", Fault::reset());
  auto res = client_->Get(object_path("obj").c_str());
  EXPECT_FALSE(res);  // no response at all
  EXPECT_EQ(emu_->request_count("objects.get"), 1u);
  // The next request (a new connection) works.
  res = client_->Get(object_path("obj").c_str());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(FaultTest, HangHoldsTheRequestUnappliedThenCloses) {
  // A stall applies the request and withholds the reply; a hang never applies it.
  emu_->inject_fault("objects.delete", Fault::hang(absl::Milliseconds(200)));
  auto res = client_->Delete(object_path("obj").c_str());
  EXPECT_FALSE(res);  // no response at all
  EXPECT_EQ(emu_->request_count("objects.delete"), 1u);
  EXPECT_TRUE(emu_->get_object_data(kBucket, "obj").ok());  // still there
  emu_->inject_fault("objects.delete", Fault::stall(absl::Milliseconds(200)));
  res = client_->Delete(object_path("obj").c_str());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 204);
  EXPECT_FALSE(emu_->get_object_data(kBucket, "obj").ok());  // applied
}

TEST_F(FaultTest, BreakAfterSendsHeadersAndSomeBytesThenCloses) {
  emu_->inject_fault("objects.media", Fault::break_after(100000));
  std::string received;
  int status = 0;
  auto res = client_->Get(
      media_.c_str(), httplib::Headers{},
      [&](const httplib::Response& r) {
        status = r.status;
        return true;
      },
      [&](const char* data, size_t n) {
        received.append(data, n);
        return true;
      });
  EXPECT_FALSE(res);  // the body ended early
  EXPECT_EQ(status, 200);
  EXPECT_EQ(received.size(), 100000u);
  EXPECT_EQ(received, data_.substr(0, 100000));
  res = client_->Get(media_.c_str());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, data_);
}

TEST_F(FaultTest, BreakOnARangedRead) {
  emu_->inject_fault("objects.media", Fault::break_after(10));
  std::string received;
  auto res = client_->Get(media_.c_str(), httplib::Headers{{"Range", "bytes=1000-1999"}},
                          [&](const char* data, size_t n) {
                            received.append(data, n);
                            return true;
                          });
  EXPECT_FALSE(res);
  EXPECT_EQ(received, data_.substr(1000, 10));
}

TEST_F(FaultTest, StallPausesTheBodyThenCompletes) {
  emu_->inject_fault("objects.media", Fault::stall(absl::Milliseconds(600), 4096));
  std::string received;
  Clock::time_point first_bytes{};
  Clock::time_point after_stall{};
  auto start = Clock::now();
  auto res = client_->Get(media_.c_str(), [&](const char* data, size_t n) {
    if (received.empty()) first_bytes = Clock::now();
    received.append(data, n);
    if (received.size() > 4096 && after_stall == Clock::time_point{}) after_stall = Clock::now();
    return true;
  });
  ASSERT_TRUE(res);
  EXPECT_EQ(received, data_);
  EXPECT_GE(seconds_since(start), 0.55);
  EXPECT_LT(std::chrono::duration<double>(first_bytes - start).count(), 0.4);
  EXPECT_GE(std::chrono::duration<double>(after_stall - first_bytes).count(), 0.5);
}

TEST_F(FaultTest, StallingClientTimesOut) {
  emu_->inject_fault("objects.media", Fault::stall(absl::Seconds(30), 0));
  auto client = make_client();
  client->set_read_timeout(0, 300000);
  auto start = Clock::now();
  auto res = client->Get(media_.c_str());
  EXPECT_FALSE(res);
  EXPECT_LT(seconds_since(start), 5.0);
  // The emulator shuts down promptly although a stall is in progress (TearDown).
}

TEST_F(FaultTest, FaultsOnJsonResponses) {
  emu_->inject_fault("objects.list", Fault::break_after(20));
  auto res = client_->Get((std::string("/storage/v1/b/") + kBucket + "/o").c_str());
  EXPECT_FALSE(res);
  emu_->inject_fault("objects.list", Fault::stall(absl::Milliseconds(200), 5));
  auto start = Clock::now();
  res = client_->Get((std::string("/storage/v1/b/") + kBucket + "/o").c_str());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json_string(res->body, "kind"), "storage#objects");
  EXPECT_GE(seconds_since(start), 0.18);
}

TEST_F(FaultTest, ControlEndpoint) {
  auto post = [&](const char* path, const std::string& body) {
    return client_->Post(path, body, "application/json");
  };
  EXPECT_EQ(post("/_dataflux/faults",
                 R"({"operation":"objects.get","kind":"status","http_status":502,"count":2})")
                ->status,
            200);
  EXPECT_EQ(emu_->pending_faults("objects.get"), 2u);
  EXPECT_EQ(client_->Get(object_path("obj").c_str())->status, 502);
  EXPECT_EQ(
      post("/_dataflux/faults", R"({"operation":"objects.media","kind":"break","after_bytes":7})")
          ->status,
      200);
  std::string received;
  EXPECT_FALSE(client_->Get(media_.c_str(), [&](const char* d, size_t n) {
    received.append(d, n);
    return true;
  }));
  EXPECT_EQ(received.size(), 7u);
  EXPECT_EQ(post("/_dataflux/faults", R"({"operation":"objects.get","kind":"reset"})")->status,
            200);
  EXPECT_EQ(post("/_dataflux/faults",
                 R"({"operation":"objects.list","kind":"stall","stall_ms":10,"after_bytes":1})")
                ->status,
            200);
  EXPECT_EQ(post("/_dataflux/faults", R"({"operation":"objects.get","kind":"explode"})")->status,
            400);
  EXPECT_EQ(post("/_dataflux/faults", "not json")->status, 400);
  EXPECT_EQ(post("/_dataflux/model", R"({"latency_ms":"fast"})")->status, 400);
  EXPECT_EQ(post("/_dataflux/model", R"({"latency_ms":-5})")->status, 400);

  auto counters = client_->Get("/_dataflux/counters");
  ASSERT_EQ(counters->status, 200);
  auto doc = parse_json(counters->body);
  EXPECT_EQ(doc["objects.get"].GetUint64(), 1u);
  EXPECT_EQ(doc["objects.media"].GetUint64(), 1u);
  EXPECT_FALSE(doc.HasMember("_dataflux"));  // control requests are not counted

  EXPECT_EQ(post("/_dataflux/reset", "")->status, 200);
  EXPECT_EQ(emu_->pending_faults("objects.get"), 0u);
  EXPECT_EQ(emu_->pending_faults("objects.list"), 0u);
  EXPECT_EQ(emu_->request_count("objects.get"), 0u);
  EXPECT_EQ(client_->Get(object_path("obj").c_str())->status, 200);
  EXPECT_EQ(client_->Get("/_dataflux/nothing")->status, 404);
}

TEST_F(FaultTest, FirstByteLatency) {
  ASSERT_EQ(client_->Post("/_dataflux/model", R"({"latency_ms":50})", "application/json")->status,
            200);
  auto start = Clock::now();
  for (int i = 0; i < 5; ++i) ASSERT_EQ(client_->Get(object_path("obj").c_str())->status, 200);
  const double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 0.25);
  EXPECT_LT(elapsed, 3.0);
  emu_->set_cloud_model({});
  start = Clock::now();
  for (int i = 0; i < 5; ++i) ASSERT_EQ(client_->Get(object_path("obj").c_str())->status, 200);
  EXPECT_LT(seconds_since(start), 0.25);
}

TEST_F(FaultTest, StreamBandwidthPacesBodies) {
  CloudModel model;
  model.stream_bytes_per_second = 4e6;  // 1 MiB at 4 MB/s: ~0.26 s
  emu_->set_cloud_model(model);
  auto start = Clock::now();
  auto res = client_->Get(media_.c_str());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, data_);
  const double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 0.22);
  EXPECT_LT(elapsed, 3.0);
  // Each stream gets the bandwidth: two in parallel take about as long as one.
  start = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&] {
      auto c = make_client();
      auto r = c->Get(media_.c_str());
      EXPECT_TRUE(r && r->body == data_);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LT(seconds_since(start), 0.26 * 2 + 0.1);
}

TEST_F(FaultTest, RequestRateLimitAnswers429) {
  CloudModel model;
  model.max_requests_per_second = 10;
  emu_->set_cloud_model(model);
  int ok = 0;
  int limited = 0;
  for (int i = 0; i < 40; ++i) {
    auto res = client_->Get(object_path("obj").c_str());
    ASSERT_TRUE(res);
    if (res->status == 200) ++ok;
    if (res->status == 429) {
      ++limited;
      EXPECT_EQ(error_reason(res->body), "rateLimitExceeded");
    }
  }
  EXPECT_EQ(ok + limited, 40);
  EXPECT_GE(ok, 10);
  EXPECT_GE(limited, 20);
  EXPECT_EQ(emu_->request_count("objects.get"), 40u);  // limited requests are counted too
  // After a pause the bucket refills.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(client_->Get(object_path("obj").c_str())->status, 200);
}

TEST_F(FaultTest, ManyRequestsOnOneKeepAliveConnection) {
  client_->set_keep_alive(true);
  for (int i = 0; i < 300; ++i) {
    auto res = client_->Get(object_path("obj").c_str());
    ASSERT_TRUE(res) << i;
    ASSERT_EQ(res->status, 200);
  }
  EXPECT_EQ(emu_->request_count("objects.get"), 300u);
}

TEST_F(FaultTest, ConcurrentClients) {
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto c = make_client();
      for (int i = 0; i < 10; ++i) {
        const std::string name = "c" + std::to_string(t) + "-" + std::to_string(i);
        auto up = c->Post(
            ("/upload/storage/v1/b/" + std::string(kBucket) + "/o?uploadType=media&name=" + name)
                .c_str(),
            name, "text/plain");
        auto down = c->Get((object_path(name) + "?alt=media").c_str());
        if (up && up->status == 200 && down && down->body == name) ++good;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 80);
  EXPECT_EQ(emu_->list_objects(kBucket).size(), 81u);
}

TEST_F(FaultTest, GarbageRequestsDoNotCrash) {
  for (const std::string& request :
       {std::string("NONSENSE\r\n\r\n"), std::string("GET / HTTP/1.1\r\n\r\n"),
        std::string("GET /storage/v1/b/x/o/%ZZ HTTP/1.1\r\nHost: x\r\n\r\n"),
        std::string("GET /" + std::string(20000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n"),
        std::string("POST /storage/v1/b HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n{"),
        std::string("POST /storage/v1/b HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n{"),
        std::string("PUT /upload/storage/v1/b/test-bucket/o?upload_id=zz HTTP/1.1\r\nHost: "
                    "x\r\nContent-Range: bytes 1-0/5\r\nContent-Length: 0\r\n\r\n")}) {
    raw_request(request);
  }
  auto res = client_->Get(object_path("obj").c_str());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

}  // namespace
}  // namespace dataflux::emulator::testing
