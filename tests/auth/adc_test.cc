// Application Default Credentials, link by link, against the emulator in authentication mode:
// every working link is proven by a real write and read through make_gcs_store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "auth_test_env.h"
#include "dataflux/credentials.h"

namespace dataflux::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Adc, RequireAuthRejectsAnonymous) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  auto status = write_and_read(a.gcs_options(make_anonymous_credentials()), "anon");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << status;
}

TEST(Adc, ExplicitCredentialsFileInGcsOptions) {
  EnvGuard env;
  TempDir dir;
  auto a = AuthEmulator::start();
  GcsOptions gcs = a.gcs_options();
  gcs.auth.credentials_file = dir.write("sa.json", a.sa_json());
  EXPECT_TRUE(write_and_read(gcs, "explicit-file").ok());
  EXPECT_EQ(a.emu->request_count("oauth.token"), 1u);
}

TEST(Adc, ExplicitCredentialsJsonInGcsOptions) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  GcsOptions gcs = a.gcs_options();
  gcs.auth.credentials_json = a.user_json();  // an authorized_user this time
  auto status = write_and_read(gcs, "explicit-json");
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(a.emu->request_count("oauth.token"), 1u);
}

TEST(Adc, ExplicitCredentialsWinOverTheEnvironment) {
  EnvGuard env;
  TempDir dir;
  auto a = AuthEmulator::start();
  env.set("GOOGLE_APPLICATION_CREDENTIALS", dir.path() + "/missing.json");
  GcsOptions gcs = a.gcs_options();
  gcs.auth.credentials_json = a.sa_json();
  auto status = write_and_read(gcs, "explicit-wins");
  EXPECT_TRUE(status.ok()) << status;
}

TEST(Adc, ExplicitCredentialsWinOverStorageEmulatorHost) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  env.set("STORAGE_EMULATOR_HOST", a.emu->endpoint());
  GcsOptions gcs;  // endpoint from STORAGE_EMULATOR_HOST, credentials from the options
  gcs.retry = fast_retry();
  gcs.auth.credentials_json = a.sa_json();
  auto status = write_and_read(gcs, "explicit-with-emulator");
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(a.emu->request_count("oauth.token"), 1u);
}

TEST(Adc, GoogleApplicationCredentials) {
  EnvGuard env;
  TempDir dir;
  auto a = AuthEmulator::start();
  env.set("GOOGLE_APPLICATION_CREDENTIALS", dir.write("key.json", a.sa_json()));
  AuthOptions auth;
  auth.retry = fast_retry();
  auto status = write_and_read(a.gcs_options(make_google_default_credentials(auth)), "gac");
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(a.emu->request_count("oauth.token"), 1u);
}

TEST(Adc, GoogleApplicationCredentialsErrorsNameTheVariableAndFile) {
  EnvGuard env;
  TempDir dir;
  std::string path = dir.write("bad.json", R"({"type":"service_account","client_email":"x@y"})");
  env.set("GOOGLE_APPLICATION_CREDENTIALS", path);
  auto header = make_google_default_credentials()->authorization_header();
  ASSERT_FALSE(header.ok());
  EXPECT_THAT(std::string(header.status().message()), HasSubstr("GOOGLE_APPLICATION_CREDENTIALS"));
  EXPECT_THAT(std::string(header.status().message()),
              HasSubstr("credentials file " + path + ": field \"private_key\" is missing"));
}

TEST(Adc, GcloudWellKnownFileUnderCloudsdkConfig) {
  EnvGuard env;
  TempDir dir;
  auto a = AuthEmulator::start();
  dir.write("application_default_credentials.json", a.user_json());
  env.set("CLOUDSDK_CONFIG", dir.path());
  env.set("GCE_METADATA_HOST", "127.0.0.1:1");  // must not be reached
  AuthOptions auth;
  auth.retry = fast_retry();
  auto status = write_and_read(a.gcs_options(make_google_default_credentials(auth)), "gcloud");
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(a.emu->request_count("oauth.token"), 1u);
  EXPECT_EQ(a.emu->request_count("metadata.token"), 0u);
}

TEST(Adc, GcloudWellKnownFileUnderHome) {
  EnvGuard env;
  TempDir dir;
  auto a = AuthEmulator::start();
  std::filesystem::create_directories(dir.path() + "/.config/gcloud");
  dir.write(".config/gcloud/application_default_credentials.json", a.sa_json());
  env.set("HOME", dir.path());
  auto status = write_and_read(a.gcs_options(make_google_default_credentials()), "home");
  EXPECT_TRUE(status.ok()) << status;
}

TEST(Adc, MetadataServerViaGceMetadataHost) {
  EnvGuard env;
  TempDir dir;
  auto a = AuthEmulator::start();
  env.set("HOME", dir.path());  // no well-known file there
  env.set("GCE_METADATA_HOST", a.host());
  AuthOptions auth;
  auth.retry = fast_retry();
  auto status = write_and_read(a.gcs_options(make_google_default_credentials(auth)), "gce");
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(a.emu->request_count("metadata.token"), 1u);  // the probe's token is reused
  EXPECT_EQ(a.emu->request_count("oauth.token"), 0u);
}

TEST(Adc, ComputeEngineCredentialsDirectly) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  env.set("GCE_METADATA_HOST", a.host());
  auto status = write_and_read(a.gcs_options(make_compute_engine_credentials()), "gce-direct");
  EXPECT_TRUE(status.ok()) << status;
}

TEST(Adc, EmulatorHostIsAnonymous) {
  EnvGuard env;
  auto emu = emulator::Emulator::start({}).value();  // no auth required
  ASSERT_TRUE(emu->create_bucket("auth-bucket").ok());
  env.set("STORAGE_EMULATOR_HOST", emu->endpoint());
  auto creds = make_google_default_credentials();
  auto header = creds->authorization_header();
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_FALSE(header->has_value());
  GcsOptions gcs;  // endpoint from STORAGE_EMULATOR_HOST, no credentials → anonymous
  gcs.retry = fast_retry();
  EXPECT_TRUE(write_and_read(gcs, "anonymous").ok());
}

TEST(Adc, NothingFoundListsEveryAttempt) {
  EnvGuard env;
  TempDir dir;
  env.set("HOME", dir.path());
  env.set("GCE_METADATA_HOST", "127.0.0.1:1");  // closed port
  auto start = std::chrono::steady_clock::now();
  auto header = make_google_default_credentials()->authorization_header();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  ASSERT_FALSE(header.ok());
  std::string message(header.status().message());
  EXPECT_THAT(message, HasSubstr("no Application Default Credentials found"));
  EXPECT_THAT(message, HasSubstr("STORAGE_EMULATOR_HOST: not set"));
  EXPECT_THAT(message, HasSubstr("credentials_file and credentials_json: empty"));
  EXPECT_THAT(message, HasSubstr("GOOGLE_APPLICATION_CREDENTIALS: not set"));
  EXPECT_THAT(message, HasSubstr(dir.path() + "/.config/gcloud/application_default_credentials.json"
                                              ": does not exist"));
  EXPECT_THAT(message, HasSubstr("GCE metadata server"));
  EXPECT_THAT(message, HasSubstr("127.0.0.1:1"));
  // The resolution is done once: a second call answers at once with the same error.
  start = std::chrono::steady_clock::now();
  auto again = make_google_default_credentials()->authorization_header();
  EXPECT_FALSE(again.ok());
}

TEST(Adc, GcsClientWithoutCredentialsUsesAdcForNonEmulatorEndpoints) {
  EnvGuard env;
  TempDir dir;
  env.set("HOME", dir.path());
  env.set("GCE_METADATA_HOST", "127.0.0.1:1");
  GcsOptions gcs;
  gcs.endpoint = "https://storage.googleapis.com";
  gcs.retry = fast_retry();
  gcs.retry.max_attempts = 1;
  auto store = make_gcs_store(gcs).value();
  auto meta = store->get_object_metadata("bkt", "o");
  ASSERT_FALSE(meta.ok());
  EXPECT_THAT(std::string(meta.status().message()),
              HasSubstr("no Application Default Credentials found"));
}

// A regional or Private Service Connect endpoint is GCS under another name: it must get
// credentials. Only STORAGE_EMULATOR_HOST or `anonymous` sends none.
TEST(Adc, ACustomEndpointUsesApplicationDefaultCredentials) {
  EnvGuard env;
  auto a = AuthEmulator::start();  // requires a valid token on storage requests
  env.set("GCE_METADATA_HOST", a.host());
  TempDir dir;
  env.set("HOME", dir.path());
  GcsOptions gcs = a.gcs_options();  // explicit endpoint, no credentials
  gcs.auth.retry = fast_retry();
  auto status = write_and_read(gcs, "custom-endpoint");
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(a.emu->request_count("metadata.token"), 1u);

  gcs.anonymous = true;  // now nothing is sent, and the server says no
  status = write_and_read(gcs, "custom-endpoint-anonymous");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << status;
  EXPECT_EQ(a.emu->request_count("metadata.token"), 1u);
}

TEST(Adc, ConcurrentFirstCallsShareOneResolution) {
  EnvGuard env;
  auto a = AuthEmulator::start();
  env.set("GCE_METADATA_HOST", a.host());
  TempDir dir;
  env.set("HOME", dir.path());
  auto creds = make_google_default_credentials();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&] {
      auto header = creds->authorization_header();
      if (header.ok() && header->has_value()) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 16);
  EXPECT_EQ(a.emu->request_count("metadata.token"), 1u);
}

}  // namespace
}  // namespace dataflux::testing
