// Helpers for credential tests: environment save/restore, a temporary directory, RSA keys made
// at test time, credential JSON builders, and an emulator in authentication mode.
#ifndef DATAFLUX_TESTS_AUTH_AUTH_TEST_ENV_H_
#define DATAFLUX_TESTS_AUTH_AUTH_TEST_ENV_H_

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataflux/credentials.h"
#include "dataflux/gcs.h"
#include "emulator/emulator.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace dataflux::testing {

// Clears the credential-related variables for one test and restores them afterwards.
class EnvGuard {
 public:
  EnvGuard() {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
      ::unsetenv(name);
    }
  }
  ~EnvGuard() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  void set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

 private:
  static constexpr const char* kNames[] = {"STORAGE_EMULATOR_HOST",
                                           "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG",
                                           "HOME", "GCE_METADATA_HOST"};
  std::map<std::string, std::optional<std::string>> saved_;
};

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "dataflux-auth-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const std::string& contents) const {
    std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary) << contents;
    return file;
  }

 private:
  std::string path_;
};

struct RsaKeyPair {
  std::string private_pem;  // PKCS#8
  std::string public_pem;   // SubjectPublicKeyInfo
};

inline std::string bio_string(BIO* bio) {
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(size));
}

inline RsaKeyPair make_rsa_key() {
  RsaKeyPair out;
  EVP_PKEY* key = EVP_RSA_gen(2048);
  if (key == nullptr) return out;
  BIO* priv = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(priv, key, nullptr, nullptr, 0, nullptr, nullptr);
  out.private_pem = bio_string(priv);
  BIO_free(priv);
  BIO* pub = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(pub, key);
  out.public_pem = bio_string(pub);
  BIO_free(pub);
  EVP_PKEY_free(key);
  return out;
}

// Two keys per process: generating RSA keys is slow, especially under sanitizers.
inline const RsaKeyPair& test_key() {
  static const RsaKeyPair key = make_rsa_key();
  return key;
}
inline const RsaKeyPair& other_key() {
  static const RsaKeyPair key = make_rsa_key();
  return key;
}

inline std::string json_of(const std::vector<std::pair<std::string, std::string>>& fields) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  for (const auto& [name, value] : fields) {
    writer.Key(name.c_str());
    writer.String(value.c_str());
  }
  writer.EndObject();
  return buffer.GetString();
}

// A unique service account email per call, so tests never share a cached token.
inline std::string unique_email() {
  static std::atomic<int> n{0};
  return "sa-" + std::to_string(n++) + "-" + std::to_string(::getpid()) +
         "@test-project.iam.gserviceaccount.com";
}

inline std::string service_account_json(const std::string& email, const std::string& token_uri,
                                        const std::string& private_pem) {
  return json_of({{"type", "service_account"},
                  {"project_id", "test-project"},
                  {"private_key_id", "kid-1"},
                  {"private_key", private_pem},
                  {"client_email", email},
                  {"token_uri", token_uri}});
}

inline const char kClientSecret[] = "client-secret-XYZZY-123";

inline std::string authorized_user_json(const std::string& client_id,
                                        const std::string& refresh_token,
                                        const std::string& token_uri) {
  return json_of({{"type", "authorized_user"},
                  {"client_id", client_id},
                  {"client_secret", kClientSecret},
                  {"refresh_token", refresh_token},
                  {"token_uri", token_uri}});
}

inline RetryOptions fast_retry() {
  return RetryOptions{5, std::chrono::milliseconds(1), std::chrono::milliseconds(10), 2.0,
                      std::chrono::milliseconds(10'000)};
}

// An emulator requiring bearer tokens, knowing `email`'s public key, one refresh client and a
// metadata server, with bucket "auth-bucket".
struct AuthEmulator {
  std::unique_ptr<emulator::Emulator> emu;
  std::string email;
  std::string client_id;
  std::string refresh_token;

  static AuthEmulator start(absl::Duration token_lifetime = absl::Hours(1)) {
    AuthEmulator out;
    out.email = unique_email();
    out.client_id = "client-" + out.email;
    out.refresh_token = "refresh-token-SECRET-" + out.email;
    emulator::EmulatorOptions options;
    options.auth.require_auth = true;
    options.auth.service_account_public_keys[out.email] = test_key().public_pem;
    options.auth.refresh_clients.push_back({out.client_id, kClientSecret, out.refresh_token});
    options.auth.metadata_server = true;
    options.auth.token_lifetime = token_lifetime;
    auto emu = emulator::Emulator::start(options);
    EXPECT_TRUE(emu.ok()) << emu.status();
    if (emu.ok()) {
      out.emu = std::move(*emu);
      EXPECT_TRUE(out.emu->create_bucket("auth-bucket").ok());
    }
    return out;
  }
  std::string sa_json() const {
    return service_account_json(email, emu->token_uri(), test_key().private_pem);
  }
  std::string user_json() const {
    return authorized_user_json(client_id, refresh_token, emu->token_uri());
  }
  // host:port of the emulator, for GCE_METADATA_HOST.
  std::string host() const { return "127.0.0.1:" + std::to_string(emu->port()); }

  GcsOptions gcs_options(std::shared_ptr<Credentials> credentials = nullptr) const {
    GcsOptions gcs;
    gcs.endpoint = emu->endpoint();
    gcs.credentials = std::move(credentials);
    gcs.retry = fast_retry();
    gcs.auth.retry = fast_retry();
    return gcs;
  }
};

// A write then a read through make_gcs_store: the proof that a credential works end to end.
inline absl::Status write_and_read(const GcsOptions& options, const std::string& object) {
  auto store = make_gcs_store(options);
  if (!store.ok()) return store.status();
  WriteObjectRequest write;
  write.bucket = "auth-bucket";
  write.object = object;
  auto written = (*store)->write_object(write, "hello " + object);
  if (!written.ok()) return written.status();
  std::string buffer(64, '\0');
  ReadObjectRequest read;
  read.bucket = "auth-bucket";
  read.object = object;
  auto result = (*store)->read_object(read, buffer.data(), buffer.size());
  if (!result.ok()) return result.status();
  if (buffer.substr(0, result->bytes) != "hello " + object) {
    return absl::DataLossError("read back something else");
  }
  return absl::OkStatus();
}

}  // namespace dataflux::testing

#endif  // DATAFLUX_TESTS_AUTH_AUTH_TEST_ENV_H_
