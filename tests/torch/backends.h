// What the torch tests share to run on every backend: the emulator's S3 endpoint takes keys
// generated at test time (never committed), and the tests reach it with path-style SigV4.
#ifndef DATAFLUX_TESTS_TORCH_BACKENDS_H_
#define DATAFLUX_TESTS_TORCH_BACKENDS_H_

#include <chrono>
#include <random>
#include <string>

#include "dataflux/s3.h"
#include "emulator/emulator.h"

namespace dataflux::testing {

// One access key pair per test process, random.
struct TestS3Keys {
  std::string access_key_id;
  std::string secret_access_key;
};

inline const TestS3Keys& test_s3_keys() {
  static const TestS3Keys keys = [] {
    std::random_device device;
    std::mt19937_64 rng(device());
    auto token = [&](std::size_t n, const std::string& alphabet) {
      std::string out;
      for (std::size_t i = 0; i < n; ++i) out += alphabet[rng() % alphabet.size()];
      return out;
    };
    return TestS3Keys{"AKIA" + token(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
                      token(40, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")};
  }();
  return keys;
}

// Lets `options`' emulator serve S3 to test_s3_keys() only.
inline void enable_test_s3(emulator::EmulatorOptions& options) {
  options.s3.access_keys[test_s3_keys().access_key_id] = test_s3_keys().secret_access_key;
  options.s3.allow_anonymous = false;
}

inline S3Options test_s3_options(const emulator::Emulator& emu, int max_attempts = 5) {
  S3Options o;
  o.endpoint = emu.endpoint();
  o.region = "us-east-1";
  o.access_key_id = test_s3_keys().access_key_id;
  o.secret_access_key = test_s3_keys().secret_access_key;
  o.addressing = S3Addressing::kPath;
  o.retry.max_attempts = max_attempts;
  o.retry.initial_backoff = std::chrono::milliseconds(1);
  o.retry.max_backoff = std::chrono::milliseconds(10);
  return o;
}

}  // namespace dataflux::testing

#endif  // DATAFLUX_TESTS_TORCH_BACKENDS_H_
