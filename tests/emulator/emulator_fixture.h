// Shared by the emulator tests: an emulator on a free loopback port with one bucket, an
// httplib client for it, and small JSON helpers.
#ifndef DATAFLUX_TESTS_EMULATOR_EMULATOR_FIXTURE_H_
#define DATAFLUX_TESTS_EMULATOR_EMULATOR_FIXTURE_H_

#include <gtest/gtest.h>
#include <httplib.h>
#include <rapidjson/document.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "emulator/emulator.h"

namespace dataflux::emulator::testing {

inline rapidjson::Document parse_json(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  return doc;
}

// A string member of a JSON object ("" when absent).
inline std::string json_string(const std::string& body, const char* key) {
  auto doc = parse_json(body);
  if (!doc.IsObject() || !doc.HasMember(key) || !doc[key].IsString()) return "";
  return doc[key].GetString();
}

// The error.errors[0].reason of a GCS error body.
inline std::string error_reason(const std::string& body) {
  auto doc = parse_json(body);
  if (!doc.IsObject() || !doc.HasMember("error")) return "";
  const auto& errors = doc["error"]["errors"];
  if (!errors.IsArray() || errors.Empty()) return "";
  return errors[0]["reason"].GetString();
}

class EmulatorTest : public ::testing::Test {
 protected:
  static constexpr char kBucket[] = "test-bucket";

  void SetUp() override { start({}); }

  void start(EmulatorOptions options) {
    auto emu = Emulator::start(std::move(options));
    ASSERT_TRUE(emu.ok()) << emu.status();
    emu_ = *std::move(emu);
    ASSERT_TRUE(emu_->create_bucket(kBucket).ok());
    client_ = make_client();
  }

  std::unique_ptr<httplib::Client> make_client() const {
    auto client = std::make_unique<httplib::Client>("127.0.0.1", emu_->port());
    client->set_url_encode(false);  // tests send exactly the escapes they mean
    client->set_tcp_nodelay(true);
    client->set_connection_timeout(5);
    client->set_read_timeout(10);
    client->set_write_timeout(10);
    return client;
  }

  // Uploads with uploadType=media; returns the object resource.
  std::string upload(const std::string& encoded_name, const std::string& data,
                     const std::string& query = "") {
    auto res = client_->Post(("/upload/storage/v1/b/" + std::string(kBucket) +
                              "/o?uploadType=media&name=" + encoded_name + query)
                                 .c_str(),
                             data, "application/octet-stream");
    EXPECT_TRUE(res) << "upload " << encoded_name;
    if (!res) return "";
    EXPECT_EQ(res->status, 200) << res->body;
    return res->body;
  }

  // Sends `request` as-is on a new connection; returns everything read until the server
  // closes it or 5 s pass.
  std::string raw_request(const std::string& request) const {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return "";
    timeval timeout{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(emu_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::string out;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t n;
      while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) {
        out.append(buffer, static_cast<std::size_t>(n));
        const std::size_t end = out.find("\r\n\r\n");
        const std::size_t length = out.find("Content-Length: ");
        if (end != std::string::npos && length != std::string::npos && length < end &&
            out.size() >= end + 4 + std::stoul(out.substr(length + 16))) {
          break;  // one whole reply
        }
      }
    }
    close(fd);
    return out;
  }

  std::string object_path(const std::string& encoded_name) const {
    return "/storage/v1/b/" + std::string(kBucket) + "/o/" + encoded_name;
  }

  std::unique_ptr<Emulator> emu_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace dataflux::emulator::testing

#endif  // DATAFLUX_TESTS_EMULATOR_EMULATOR_FIXTURE_H_
